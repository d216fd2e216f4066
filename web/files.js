/* files: the demo page's document translator.  A file dropped on the zone
 * (or chosen) goes to POST /translate_file (async); a progress bar follows
 * GET /translate_file/ID until the job is done, then a link downloads the
 * translated file.  The languages are the translator's (its From and To). */

import * as API from './api.js';

export class FilePanel {
  constructor(el) {
    this.el = el;          /* {zone, input, progress, status, link, error, cancel, source(), target()} */
    this.abort = null;
    el.zone.addEventListener('dragover', (ev) => { ev.preventDefault(); el.zone.classList.add('over'); });
    el.zone.addEventListener('dragleave', () => el.zone.classList.remove('over'));
    el.zone.addEventListener('drop', (ev) => {
      ev.preventDefault();
      el.zone.classList.remove('over');
      if (ev.dataTransfer.files.length) this.send(ev.dataTransfer.files[0]);
    });
    el.zone.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); el.input.click(); }
    });
    el.zone.addEventListener('click', () => el.input.click());
    el.input.addEventListener('change', () => { if (el.input.files.length) this.send(el.input.files[0]); });
    el.cancel.addEventListener('click', () => { if (this.abort) this.abort.abort(); });
  }

  show(state) {
    const { progress, status, link, error, cancel } = this.el;
    error.hidden = !state.error;
    error.textContent = state.error || '';
    status.textContent = state.status || '';
    progress.hidden = state.total === undefined;
    if (state.total !== undefined) {
      progress.max = Math.max(state.total, 1);
      progress.value = state.done;
    }
    link.hidden = !state.href;
    if (state.href) { link.href = state.href; link.download = state.name; link.textContent = 'Download ' + state.name; }
    cancel.hidden = !state.running;
  }

  async send(file) {
    if (this.abort) this.abort.abort();
    const abort = this.abort = new AbortController();
    this.show({ status: `Sending ${file.name} (${file.size} bytes)…`, running: true });
    try {
      const job = await API.translateFile(file, this.el.source(), this.el.target(), abort.signal);
      for (;;) {
        const st = await API.fileStatus(job.status_url, abort.signal);
        this.show({ status: `${st.format}: ${st.done} of ${st.total} units translated`, done: st.done,
                    total: st.total, running: st.state === 'running' });
        if (st.state === 'done') {
          this.show({ status: `${st.name}: done in ${(st.elapsed_ms / 1000).toFixed(1)} s`, done: st.total,
                      total: st.total, href: API.fileUrl(st.translatedFileUrl), name: st.name });
          return;
        }
        if (st.state !== 'running') throw new Error(`the file job ${st.state}: ${st.error || ''}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    } catch (e) {
      if (e.name === 'AbortError') this.show({ status: 'Cancelled.' });
      else this.show({ error: e.message });
    } finally {
      if (this.abort === abort) this.abort = null;
    }
  }
}
