/*
 * bench/html_parsers.c: gumbo 0.10.1 vs libxml2's HTML parser (issue 27: "measure both on
 * broken real-world markup and pick").  Driven by bench/html_parsers.py, which compares the
 * trees printed here with html5lib's (the reference) and runs the timings and the depth test.
 *
 *   cc -O2 bench/html_parsers.c -o build-hx/bench/html_parsers \
 *      $(pkg-config --cflags --libs gumbo libxml-2.0) -pthread
 *
 *   html_parsers tree  PARSER FILE            the parse tree of FILE, one node a line:
 *                                             "E depth name attrs" (attrs: name=value, sorted,
 *                                             separated by \x1f), "T depth text", "C depth text";
 *                                             bytes < 0x20 and '\\' escaped as \xHH
 *   html_parsers time  PARSER FILE REPS       parse + free FILE REPS times: median and best ms,
 *                                             MB/s, peak RSS (VmHWM)
 *   html_parsers deep  PARSER N STACK_KB [TAG [open]]
 *                                             N nested <TAG>s (default div; closed unless
 *                                             "open"): parse on one thread, free
 *                                             on another, each with a STACK_KB stack of its own
 *                                             (guard page below); prints the stack bytes each
 *                                             used (pages touched, mincore).  Overflowing the
 *                                             stack kills the process with SIGSEGV.
 *
 * PARSER: gumbo (kGumboDefaultOptions: every parse error recorded), gumbo0 (max_errors 0:
 * none recorded, what a server would use), libxml2 (htmlReadMemory, UTF-8, RECOVER |
 * NOERROR | NOWARNING | NONET).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <gumbo.h>
#include <libxml/HTMLparser.h>
#include <libxml/tree.h>

static void die(const char *m) { fprintf(stderr, "html_parsers: %s\n", m); exit(2); }

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open input");
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- output -------------------------------------------------------------------------- */

static void put_escaped(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '\\' || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
}

static void put_lower(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) putchar(tolower((unsigned char)s[i]));
}

typedef struct { char *name; char *value; } attr;

static int attr_cmp(const void *a, const void *b) {
    int c = strcmp(((const attr *)a)->name, ((const attr *)b)->name);
    return c ? c : strcmp(((const attr *)a)->value, ((const attr *)b)->value);
}

static void put_attrs(attr *v, size_t n) {
    qsort(v, n, sizeof *v, attr_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i) putchar(0x1f);  /* raw: the reader splits on it before unescaping */
        put_escaped(v[i].name, strlen(v[i].name));
        putchar('=');
        put_escaped(v[i].value, strlen(v[i].value));
    }
}

/* ---- gumbo --------------------------------------------------------------------------- */

static GumboOptions gumbo_opts(const char *parser) {
    GumboOptions o = kGumboDefaultOptions;
    if (strcmp(parser, "gumbo0") == 0) o.max_errors = 0;
    return o;
}

static void gumbo_name(const GumboElement *e) {
    if (e->tag != GUMBO_TAG_UNKNOWN) {
        fputs(gumbo_normalized_tagname(e->tag), stdout);
        return;
    }
    GumboStringPiece p = e->original_tag;
    gumbo_tag_from_original_text(&p);
    put_lower(p.data, p.length);
}

static void gumbo_print(const GumboNode *n, int depth) {
    switch (n->type) {
    case GUMBO_NODE_DOCUMENT:
        for (unsigned i = 0; i < n->v.document.children.length; i++)
            gumbo_print(n->v.document.children.data[i], depth);
        break;
    case GUMBO_NODE_ELEMENT:
    case GUMBO_NODE_TEMPLATE: {
        const GumboElement *e = &n->v.element;
        printf("E\t%d\t", depth);
        gumbo_name(e);
        putchar('\t');
        attr *v = calloc(e->attributes.length + 1, sizeof *v);
        for (unsigned i = 0; i < e->attributes.length; i++) {
            const GumboAttribute *a = e->attributes.data[i];
            v[i].name = strdup(a->name);
            for (char *c = v[i].name; *c; c++) *c = tolower((unsigned char)*c);
            v[i].value = (char *)a->value;
        }
        put_attrs(v, e->attributes.length);
        for (unsigned i = 0; i < e->attributes.length; i++) free(v[i].name);
        free(v);
        putchar('\n');
        for (unsigned i = 0; i < e->children.length; i++)
            gumbo_print(e->children.data[i], depth + 1);
        break;
    }
    case GUMBO_NODE_TEXT:
    case GUMBO_NODE_CDATA:
    case GUMBO_NODE_WHITESPACE:
        printf("T\t%d\t", depth);
        put_escaped(n->v.text.text, strlen(n->v.text.text));
        putchar('\n');
        break;
    case GUMBO_NODE_COMMENT:
        printf("C\t%d\t", depth);
        put_escaped(n->v.text.text, strlen(n->v.text.text));
        putchar('\n');
        break;
    }
}

/* ---- libxml2 ------------------------------------------------------------------------- */

static const int XML_OPTS = HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET;

static htmlDocPtr xml_parse(const char *buf, size_t len) {
    return htmlReadMemory(buf, (int)len, NULL, "UTF-8", XML_OPTS);
}

static void xml_print(xmlNodePtr n, int depth) {
    for (; n; n = n->next) {
        switch (n->type) {
        case XML_ELEMENT_NODE: {
            printf("E\t%d\t", depth);
            put_lower((const char *)n->name, strlen((const char *)n->name));
            putchar('\t');
            size_t na = 0;
            for (xmlAttrPtr a = n->properties; a; a = a->next) na++;
            attr *v = calloc(na + 1, sizeof *v);
            size_t i = 0;
            for (xmlAttrPtr a = n->properties; a; a = a->next, i++) {
                v[i].name = strdup((const char *)a->name);
                xmlChar *val = xmlNodeListGetString(n->doc, a->children, 1);
                /* a boolean attribute (<input disabled>) has no value node: "" */
                v[i].value = strdup(val ? (const char *)val : "");
                xmlFree(val);
            }
            put_attrs(v, na);
            for (i = 0; i < na; i++) { free(v[i].name); free(v[i].value); }
            free(v);
            putchar('\n');
            xml_print(n->children, depth + 1);
            break;
        }
        case XML_TEXT_NODE:
        case XML_CDATA_SECTION_NODE:
            printf("T\t%d\t", depth);
            if (n->content) put_escaped((const char *)n->content, strlen((const char *)n->content));
            putchar('\n');
            break;
        case XML_COMMENT_NODE:
            printf("C\t%d\t", depth);
            if (n->content) put_escaped((const char *)n->content, strlen((const char *)n->content));
            putchar('\n');
            break;
        default:
            break;
        }
    }
}

/* ---- modes --------------------------------------------------------------------------- */

static int is_gumbo(const char *p) { return strncmp(p, "gumbo", 5) == 0; }

static void mode_tree(const char *parser, const char *path) {
    size_t len;
    char *buf = read_file(path, &len);
    if (is_gumbo(parser)) {
        GumboOptions o = gumbo_opts(parser);
        GumboOutput *out = gumbo_parse_with_options(&o, buf, len);
        gumbo_print(out->document, 0);
        gumbo_destroy_output(&o, out);
    } else {
        htmlDocPtr d = xml_parse(buf, len);
        if (d) xml_print(d->children, 0);
        xmlFreeDoc(d);
    }
    free(buf);
}

/* The process's peak RSS (VmHWM: getrusage's ru_maxrss survives exec, so it would count
 * the parent's) */
static long peak_rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &kb) == 1)
            break;
    if (f) fclose(f);
    return kb;
}

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void mode_time(const char *parser, const char *path, int reps) {
    size_t len;
    char *buf = read_file(path, &len);
    double *t = malloc(reps * sizeof *t);
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        if (is_gumbo(parser)) {
            GumboOptions o = gumbo_opts(parser);
            GumboOutput *out = gumbo_parse_with_options(&o, buf, len);
            gumbo_destroy_output(&o, out);
        } else {
            xmlFreeDoc(xml_parse(buf, len));
        }
        t[r] = now_ms() - t0;
    }
    qsort(t, reps, sizeof *t, dcmp);
    double med = t[reps / 2];
    printf("parser=%s bytes=%zu reps=%d median_ms=%.2f best_ms=%.2f mb_per_s=%.1f max_rss_kb=%ld\n",
           parser, len, reps, med, t[0], len / 1e6 / (med / 1e3), peak_rss_kb());
    free(t);
    free(buf);
}

/* deep: one stack of our own per thread, so that its high-water mark can be read */
typedef struct {
    const char *parser;
    const char *buf;
    size_t len;
    void *tree;
    double ms;
} deep_job;

static void *deep_parse(void *arg) {
    deep_job *j = arg;
    double t0 = now_ms();
    if (is_gumbo(j->parser)) {
        GumboOptions o = gumbo_opts(j->parser);
        j->tree = gumbo_parse_with_options(&o, j->buf, j->len);
    } else {
        j->tree = xml_parse(j->buf, j->len);
    }
    j->ms = now_ms() - t0;
    return NULL;
}

static void *deep_free(void *arg) {
    deep_job *j = arg;
    double t0 = now_ms();
    if (is_gumbo(j->parser)) {
        GumboOptions o = gumbo_opts(j->parser);
        gumbo_destroy_output(&o, j->tree);
    } else {
        xmlFreeDoc(j->tree);
    }
    j->ms = now_ms() - t0;
    return NULL;
}

/* Runs fn on a thread whose stack is `size` bytes of a fresh mapping (one PROT_NONE guard
 * page below it); returns the bytes of that stack the thread touched. */
static size_t run_on_stack(void *(*fn)(void *), void *arg, size_t size) {
    long pg = sysconf(_SC_PAGESIZE);
    size = (size + pg - 1) / pg * pg;
    char *map = mmap(NULL, size + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) die("mmap");
    if (mprotect(map, pg, PROT_NONE) != 0) die("mprotect");
    char *stack = map + pg;
    pthread_attr_t a;
    pthread_attr_init(&a);
    if (pthread_attr_setstack(&a, stack, size) != 0) die("pthread_attr_setstack");
    pthread_t th;
    if (pthread_create(&th, &a, fn, arg) != 0) die("pthread_create");
    pthread_join(th, NULL);
    pthread_attr_destroy(&a);
    size_t npages = size / pg;
    unsigned char *vec = malloc(npages);
    if (mincore(stack, size, vec) != 0) die("mincore");
    size_t first = 0;
    while (first < npages && !(vec[first] & 1)) first++;
    free(vec);
    munmap(map, size + pg);
    return (npages - first) * pg;
}

static void mode_deep(const char *parser, long n, long stack_kb, const char *tag, int closed) {
    size_t tl = strlen(tag);
    char *buf = malloc((size_t)n * (2 * tl + 5) + 2), *p = buf;
    for (long i = 0; i < n; i++) { *p++ = '<'; p = stpcpy(p, tag); *p++ = '>'; }
    *p++ = 'x';
    for (long i = 0; closed && i < n; i++) { *p++ = '<'; *p++ = '/'; p = stpcpy(p, tag); *p++ = '>'; }
    *p = 0;
    size_t len = p - buf;
    deep_job j = { parser, buf, len, NULL, 0 };
    size_t st = (size_t)stack_kb << 10;
    printf("parser=%s tag=%s%s depth=%ld stack_kb=%ld ", parser, tag, closed ? "" : "(unclosed)", n, stack_kb);
    fflush(stdout);
    size_t used_parse = run_on_stack(deep_parse, &j, st);
    printf("parse_ms=%.1f parse_stack_bytes=%zu ", j.ms, used_parse);
    fflush(stdout);
    size_t used_free = run_on_stack(deep_free, &j, st);
    printf("free_ms=%.1f free_stack_bytes=%zu\n", j.ms, used_free);
    free(buf);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: html_parsers tree|time|deep gumbo|gumbo0|libxml2 ARGS (see the top of bench/html_parsers.c)\n");
        return 2;
    }
    const char *mode = argv[1], *parser = argv[2];
    if (!is_gumbo(parser) && strcmp(parser, "libxml2") != 0) die("parser: gumbo, gumbo0 or libxml2");
    xmlInitParser();
    if (strcmp(mode, "tree") == 0) mode_tree(parser, argv[3]);
    else if (strcmp(mode, "time") == 0 && argc >= 5) mode_time(parser, argv[3], atoi(argv[4]));
    else if (strcmp(mode, "deep") == 0 && argc >= 5)
        mode_deep(parser, atol(argv[3]), atol(argv[4]), argc > 5 ? argv[5] : "div", !(argc > 6 && strcmp(argv[6], "open") == 0));
    else die("bad mode or arguments");
    xmlCleanupParser();
    return 0;
}
