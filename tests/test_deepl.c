/* test_deepl: DeepL's API v2 (server/api/deepl_api.c) on the real server over
 * loopback, with the shipped models (en-fr, fr-en) and a keys file:
 *   - POST /v2/translate, form (repeated text=) and JSON: every text equals
 *     the same translation through POST /translate; detected_source_language,
 *     billed_characters; source detected, and detected as the target: sent back;
 *   - split_sentences 0 / 1 / nonewlines and tag_handling html each equal the
 *     POST /translate request they stand for;
 *   - tag_handling xml with ignore_tags, splitting_tags, outline_detection=0,
 *     as JSON arrays and as a form's comma lists: each unit's words are its
 *     plain translation, the ignored element, CDATA, comments and PIs come back
 *     byte for byte, libxml2 reads the output with the input's elements;
 *     malformed XML is 400 with expat's message; ignore_tags with html keeps
 *     its element byte for byte, the other words the plain translation's;
 *   - /v2/languages (source, target with DeepL's variants) and /v2/usage: the
 *     count is the code points sent, per key, given back for failed requests,
 *     456 past char-quota, kept across a restart in --usage-file;
 *   - errors in DeepL's shape {"message"} and statuses: 403 wrong or missing
 *     key, 400 for what is missing, unknown or refused, 429 with Retry-After;
 *   - documents: upload, status, result (then deleted), its characters billed
 *     and refused past the quota, a wrong key or id 404, refusals by name;
 *   - glossaries, v2 and v3: made (TSV, CSV), listed, read, edited, deleted,
 *     seen by their key only; glossary_id translates as POST /translate with
 *     the same terms as "glossary" does.
 * deepl-node, DeepL's own client, drives the same server in tests/e2e/deepl_client.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "harness.h"

static server srv;
static char keys_path[256], usage_path[256];

#define KEY_A  "Authorization: DeepL-Auth-Key alpha-key:fx"     /* no quota */
#define KEY_Q  "Authorization: DeepL-Auth-Key quota-key"        /* char-quota=60 */
#define KEY_R  "Authorization: DeepL-Auth-Key slow-key"         /* req-limit=1 */
#define FORM   "application/x-www-form-urlencoded"

static int start(void)
{
    const char *const args[] = { "--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en",
                                 "--api-keys", keys_path, "--usage-file", usage_path, "--threads", "2", NULL };
    return server_start(&srv, args);
}

static int setup(void **state)
{
    (void)state;
    snprintf(keys_path, sizeof keys_path, "/tmp/test_deepl_keys.%d", (int)getpid());
    snprintf(usage_path, sizeof usage_path, "/tmp/test_deepl_usage.%d", (int)getpid());
    FILE *f = fopen(keys_path, "w");
    if (!f)
        return -1;
    fprintf(f, "# test_deepl\nalpha-key:fx\nquota-key char-quota=60\nslow-key req-limit=1\n");
    fclose(f);
    unlink(usage_path);
    return start();
}

static int teardown(void **state)
{
    (void)state;
    int rc = server_stop(&srv);
    unlink(keys_path);
    unlink(usage_path);
    return rc == -2 ? -1 : 0;
}

/* A DeepL request: body (form unless it starts with '{'), with key (a header line or NULL). */
static reply dl(const char *method, const char *path, const char *key, const char *body)
{
    req_opts o = { .method = method, .body = body,
                   .content_type = body && body[0] == '{' ? "application/json" : FORM, .extra = { key } };
    return http_req(&srv, path, &o);
}

/* The translations of a DeepL reply, asserted 200. */
static json_t *dl_translations(const char *key, const char *body)
{
    reply r = dl("POST", "/v2/translate", key, body);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    json_t *list = json_incref(json_object_get(j, "translations"));
    json_decref(j);
    assert_true(json_is_array(list));
    return list;
}

/* Our POST /translate of one text (a JSON body's other fields in extra). */
static char *ours(const char *text, const char *source, const char *target, const char *extra)
{
    json_t *body = json_pack("{s:s,s:s,s:s}", "text", text, "source", source, "target", target);
    if (extra) {
        json_t *more = json_loads(extra, 0, NULL);
        json_object_update(body, more);
        json_decref(more);
    }
    char *b = json_dumps(body, 0);
    req_opts o = { .body = b, .extra = { "Authorization: Bearer alpha-key:fx" } };
    reply r = http_req(&srv, "/translate", &o);
    json_t *j = expect_json(&r, 200);
    char *out = strdup(json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0),
                                                         "text")));
    json_decref(j);
    reply_free(&r);
    free(b);
    json_decref(body);
    return out;
}

static const char *tr_text(json_t *list, size_t i)
{
    return json_string_value(json_object_get(json_array_get(list, i), "text"));
}

static const char *tr_lang(json_t *list, size_t i)
{
    return json_string_value(json_object_get(json_array_get(list, i), "detected_source_language"));
}

/* The DeepL error of a reply: its status asserted, its message returned (static). */
static const char *dl_error(reply *r, long status)
{
    static char msg[512];
    json_t *j = expect_json(r, status);
    assert_true(json_is_string(json_object_get(j, "message")));
    assert_int_equal(json_object_size(j), 1);           /* {"message"} and nothing else */
    snprintf(msg, sizeof msg, "%s", json_string_value(json_object_get(j, "message")));
    json_decref(j);
    reply_free(r);
    return msg;
}

static void test_translate_form(void **state)
{
    (void)state;
    static const char *const texts[] = { "The cat sleeps on the sofa.", "How are you today? I am fine.", "  " };
    json_t *list = dl_translations(KEY_A, "text=The+cat+sleeps+on+the+sofa.&target_lang=FR&source_lang=EN"
                                          "&text=How+are+you+today%3F+I+am+fine.&text=++&show_billed_characters=1");
    assert_int_equal(json_array_size(list), 3);
    for (size_t i = 0; i < 3; i++) {
        char *want = i < 2 ? ours(texts[i], "en", "fr", NULL) : strdup(texts[i]);   /* blank: as sent */
        print_message("    %s -> %s\n", texts[i], tr_text(list, i));
        assert_string_equal(tr_text(list, i), want);
        assert_string_equal(tr_lang(list, i), "EN");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(list, i), "billed_characters")),
                         strlen(texts[i]));
        free(want);
    }
    json_decref(list);
}

static void test_translate_json_detected(void **state)
{
    (void)state;
    /* no source: detected; EN-GB is English */
    json_t *list = dl_translations(KEY_A, "{\"text\": [\"Le chat dort sur le canapé.\", \"Il fait beau.\"], "
                                          "\"target_lang\": \"EN-GB\"}");
    char *a = ours("Le chat dort sur le canapé.", "fr", "en", NULL), *b = ours("Il fait beau.", "fr", "en", NULL);
    assert_string_equal(tr_text(list, 0), a);
    assert_string_equal(tr_text(list, 1), b);
    assert_string_equal(tr_lang(list, 0), "FR");
    assert_null(json_object_get(json_array_get(list, 0), "billed_characters"));     /* not asked for */
    free(a);
    free(b);
    json_decref(list);
    /* detected as the target language: sent back unchanged */
    list = dl_translations(KEY_A, "text=Le+fichier+contient+une+liste+des+paquets+install%C3%A9s.&target_lang=fr");
    assert_string_equal(tr_text(list, 0), "Le fichier contient une liste des paquets installés.");
    assert_string_equal(tr_lang(list, 0), "FR");
    json_decref(list);
}

static void test_split_sentences(void **state)
{
    (void)state;
    const char *wrapped = "The weather is very nice\ntoday in the city.\n\nWe will go out.";
    char *joined = ours("The weather is very nice today in the city.\n\nWe will go out.", "en", "fr", NULL);
    char *lines = ours(wrapped, "en", "fr", NULL);
    char *whole = ours(wrapped, "en", "fr", "{\"split\": false}");
    json_t *body = json_pack("{s:[s],s:s,s:s,s:s}", "text", wrapped, "source_lang", "EN", "target_lang", "FR",
                             "split_sentences", "nonewlines");
    const char *modes[] = { "nonewlines", "1", "0" }, *want[] = { joined, lines, whole };
    for (int m = 0; m < 3; m++) {
        json_object_set_new(body, "split_sentences", json_string(modes[m]));
        char *b = json_dumps(body, 0);
        json_t *list = dl_translations(KEY_A, b);
        print_message("    split_sentences %s: %s\n", modes[m], tr_text(list, 0));
        char got[1024];
        snprintf(got, sizeof got, "%s", tr_text(list, 0));
        if (m == 0) {       /* the joined break is put back: one line break more, in the first paragraph */
            char *para = strstr(got, "\n\n"), *nl = strchr(got, '\n');
            assert_non_null(para);
            assert_true(nl && nl < para);
            *nl = ' ';
        }
        assert_string_equal(got, want[m]);
        json_decref(list);
        free(b);
    }
    assert_string_not_equal(joined, lines);     /* the wrapped line made a difference */
    json_decref(body);
    free(joined);
    free(lines);
    free(whole);
}

static void test_tag_handling(void **state)
{
    (void)state;
    const char *page = "<p>The <b>red</b> car is <a href=\"x.html\">here</a>.</p>";
    char *want = ours(page, "en", "fr", "{\"format\": \"html\"}");
    json_t *body = json_pack("{s:[s],s:s,s:s,s:s}", "text", page, "source_lang", "EN", "target_lang", "FR",
                             "tag_handling", "html");
    char *b = json_dumps(body, 0);
    json_t *list = dl_translations(KEY_A, b);
    print_message("    %s\n", tr_text(list, 0));
    assert_string_equal(tr_text(list, 0), want);
    assert_non_null(strstr(tr_text(list, 0), "<a href=\"x.html\">"));
    json_decref(list);
    free(b);
    json_decref(body);
    free(want);
}

/* s without its tags, whitespace runs made one space, trimmed: malloc'd. */
static char *words_of(const char *s)
{
    char *o = malloc(strlen(s) + 1);
    size_t k = 0;
    int in_tag = 0;
    for (; *s; s++) {
        if (*s == '<' || *s == '>') {
            in_tag = *s == '<';
            continue;
        }
        if (in_tag)
            continue;
        if (*s == ' ' || *s == '\n' || *s == '\t') {
            if (k && o[k - 1] != ' ')
                o[k++] = ' ';
            continue;
        }
        o[k++] = *s;
    }
    while (k && o[k - 1] == ' ')
        k--;
    o[k] = 0;
    return o;
}

/* The names of out's elements in document order, read by libxml2 (wrapped in a root). */
static char *element_names(const char *out)
{
    size_t n = strlen(out);
    char *w = malloc(n + 8), *names = calloc(1, n + 2);
    sprintf(w, "<r>%s</r>", out);
    xmlDocPtr doc = xmlReadMemory(w, (int)strlen(w), NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR);
    assert_non_null(doc);
    xmlNodePtr stack[64];
    int top = 0;
    stack[top++] = xmlDocGetRootElement(doc)->children;
    while (top) {
        xmlNodePtr c = stack[--top];
        if (!c)
            continue;
        stack[top++] = c->next;
        if (c->type == XML_ELEMENT_NODE) {
            strcat(names, (const char *)c->name);
            strcat(names, " ");
            if (top < 63)
                stack[top++] = c->children;
        }
    }
    xmlFreeDoc(doc);
    free(w);
    return names;
}

static void test_tag_handling_xml(void **state)
{
    (void)state;
    const char *doc = "<doc><par>The <b>red</b> car is here.</par>\n<note>Keep <b>this</b> as it is.</note>"
                      "<par a='1'>The cat <x/> sleeps.</par></doc>";
    json_t *body = json_pack("{s:[s],s:s,s:s,s:s,s:[s],s:s,s:s}", "text", doc, "source_lang", "EN", "target_lang",
                             "FR", "tag_handling", "xml", "ignore_tags", "note", "splitting_tags", "par",
                             "outline_detection", "0");
    char *b = json_dumps(body, 0);
    json_t *list = dl_translations(KEY_A, b);
    const char *out = tr_text(list, 0);
    print_message("    %s\n", out);
    assert_non_null(strstr(out, "\n<note>Keep <b>this</b> as it is.</note><par a='1'>"));    /* byte for byte */
    assert_int_equal(strncmp(out, "<doc><par>", 10), 0);
    char *names = element_names(out);
    assert_string_equal(names, "doc par b note b par x ");
    free(names);
    /* each par's words are the plain translation of its sentence */
    const char *second = strstr(out, "<par a='1'>");
    char first_par[512];
    snprintf(first_par, sizeof first_par, "%.*s", (int)(strstr(out, "</par>") - out), out);
    char *w1 = words_of(first_par), *w2 = words_of(second);
    char *p1 = ours("The red car is here.", "en", "fr", NULL), *p2 = ours("The cat sleeps.", "en", "fr", NULL);
    assert_string_equal(w1, p1);
    assert_string_equal(w2, p2);
    free(w1), free(w2), free(p1), free(p2);
    /* the form deepl-node sends: comma lists, "0"; the same answer */
    char form[1024];
    snprintf(form, sizeof form, "text=%s&source_lang=EN&target_lang=FR&tag_handling=xml&ignore_tags=note,%%20skip"
             "&splitting_tags=par,title&outline_detection=0",
             "%3Cdoc%3E%3Cpar%3EThe%20%3Cb%3Ered%3C/b%3E%20car%20is%20here.%3C/par%3E%0A%3Cnote%3EKeep%20%3Cb%3Ethis"
             "%3C/b%3E%20as%20it%20is.%3C/note%3E%3Cpar%20a='1'%3EThe%20cat%20%3Cx/%3E%20sleeps.%3C/par%3E%3C/doc%3E");
    json_t *list2 = dl_translations(KEY_A, form);
    assert_string_equal(tr_text(list2, 0), out);
    json_decref(list2);
    json_decref(list);
    free(b);
    json_decref(body);
    /* what is not translated comes back as it was (the text a sentence the model translates:
     * the issue-53 en-fr gives "Hello world" back as it is) */
    const char *raw = "<p q='1'>The red car is <![CDATA[<raw> & x]]> here <?pi x?><!-- c --> <br/></p>";
    body = json_pack("{s:[s],s:s,s:s,s:s}", "text", raw, "source_lang", "EN", "target_lang", "FR", "tag_handling",
                     "xml");
    b = json_dumps(body, 0);
    list = dl_translations(KEY_A, b);
    out = tr_text(list, 0);
    print_message("    %s\n", out);
    const char *keep[] = { "<p q='1'>", "<![CDATA[<raw> & x]]>", "<?pi x?>", "<!-- c -->", "<br/>", "</p>" };
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
        assert_non_null(strstr(out, keep[i]));
    assert_string_not_equal(out, raw);              /* translated */
    json_decref(list);
    free(b);
    json_decref(body);
    /* ignore_tags with html: the element kept byte for byte, the rest translated as without it */
    const char *page = "<p>The red car is <kbd>ls  -l</kbd> here.</p>";
    body = json_pack("{s:[s],s:s,s:s,s:s,s:s}", "text", page, "source_lang", "EN", "target_lang", "FR", "tag_handling",
                     "html", "ignore_tags", "kbd");
    b = json_dumps(body, 0);
    list = dl_translations(KEY_A, b);
    out = tr_text(list, 0);
    print_message("    %s\n", out);
    assert_non_null(strstr(out, "<kbd>ls  -l</kbd>"));
    char *w = words_of(out), *plain = ours("The red car is here.", "en", "fr", NULL);
    char *wk = words_of(plain);
    /* the words: the plain sentence's, with the kept element's where the alignment put it */
    char *at = strstr(w, "ls -l");
    assert_non_null(at);
    memmove(at, at + 5, strlen(at + 5) + 1);
    char *ws = words_of(w);
    assert_string_equal(ws, wk);
    free(w), free(plain), free(wk), free(ws);
    json_decref(list);
    free(b);
    json_decref(body);
    /* malformed: 400 with the parser's words; the other tag lists with html, any without tag handling: refused */
    static const struct {
        const char *body, *says;
    } bad[] = {
        { "text=%3Cp%3Ex%3C/b%3E&target_lang=FR&source_lang=EN&tag_handling=xml", "mismatched tag" },
        { "text=%3Cp%3E%26nbsp;%3C/p%3E&target_lang=FR&source_lang=EN&tag_handling=xml", "undefined entity" },
        { "text=x&target_lang=FR&tag_handling=html&splitting_tags=x", "splitting_tags" },
        { "text=x&target_lang=FR&splitting_tags=x", "splitting_tags" },
        { "{\"text\": \"x\", \"target_lang\": \"FR\", \"tag_handling\": \"xml\", \"non_splitting_tags\": [1]}",
          "non_splitting_tags" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        reply r = dl("POST", "/v2/translate", KEY_A, bad[i].body);
        const char *msg = dl_error(&r, 400);
        print_message("    %s -> %s\n", bad[i].body, msg);
        assert_non_null(strstr(msg, bad[i].says));
        if (i < 2)
            assert_non_null(strstr(msg, "Tag handling parsing failed"));
    }
}

/* The query string's fields stand for a body's (LibreTranslate's Flask reads request.values). */
static void test_query_fields(void **state)
{
    (void)state;
    req_opts o = { .method = "POST", .extra = { "Authorization: Bearer alpha-key:fx" } };
    reply r = http_req(&srv, "/translate?q=The+cat+sleeps.&source=en&target=fr", &o);
    json_t *j = expect_json(&r, 200);
    char *want = ours("The cat sleeps.", "en", "fr", NULL);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), want);
    json_decref(j);
    reply_free(&r);
    free(want);
    /* a body's field wins over the query's */
    o = (req_opts){ .body = "{\"q\": \"Il fait beau.\"}", .extra = { "Authorization: Bearer alpha-key:fx" } };
    r = http_req(&srv, "/translate?q=ignored&source=fr&target=en", &o);
    j = expect_json(&r, 200);
    want = ours("Il fait beau.", "fr", "en", NULL);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), want);
    json_decref(j);
    reply_free(&r);
    free(want);
}

static void test_languages(void **state)
{
    (void)state;
    reply r = dl("GET", "/v2/languages", KEY_A, NULL);
    json_t *src = expect_json(&r, 200);
    reply_free(&r);
    r = dl("GET", "/v2/languages?type=target", KEY_A, NULL);
    json_t *tgt = expect_json(&r, 200);
    reply_free(&r);
    r = dl("POST", "/v2/languages", KEY_A, "type=target");
    json_t *tgt2 = expect_json(&r, 200);
    reply_free(&r);
    assert_true(json_equal(tgt, tgt2));
    char *s = json_dumps(src, JSON_SORT_KEYS), *t = json_dumps(tgt, JSON_SORT_KEYS);
    print_message("    source: %s\n    target: %s\n", s, t);
    assert_string_equal(s, "[{\"language\": \"EN\", \"name\": \"English\"}, {\"language\": \"FR\", \"name\": \"French\"}]");
    assert_non_null(strstr(t, "{\"language\": \"EN-GB\", \"name\": \"English (GB)\", \"supports_formality\": false}"));
    assert_non_null(strstr(t, "\"EN-US\""));
    assert_non_null(strstr(t, "\"FR\""));
    assert_null(strstr(t, "\"EN\""));                  /* DeepL names English targets by variant only */
    free(s);
    free(t);
    json_decref(src);
    json_decref(tgt);
    json_decref(tgt2);
    r = dl("GET", "/v2/languages?type=both", KEY_A, NULL);
    assert_non_null(strstr(dl_error(&r, 400), "type"));
    /* the OpenAPI document has them */
    r = dl("GET", "/openapi.json", "Authorization: Bearer alpha-key:fx", NULL);
    json_t *doc = expect_json(&r, 200);
    reply_free(&r);
    const char *paths[] = { "/v2/translate", "/v2/languages", "/v2/usage" };
    for (int i = 0; i < 3; i++)
        assert_non_null(json_object_get(json_object_get(doc, "paths"), paths[i]));
    json_decref(doc);
}

static long usage_count(const char *key)
{
    reply r = dl("GET", "/v2/usage", key, NULL);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    long n = (long)json_integer_value(json_object_get(j, "character_count"));
    json_decref(j);
    return n;
}

static void test_usage_and_quota(void **state)
{
    (void)state;
    long before = usage_count(KEY_Q);
    /* 19 + 3 code points ("é" is one) */
    json_t *list = dl_translations(KEY_Q, "text=The+house+is+small.&text=%C3%A9t%C3%A9&target_lang=FR&source_lang=EN");
    json_decref(list);
    assert_int_equal(usage_count(KEY_Q), before + 22);
    /* a failed request is not counted */
    reply r = dl("POST", "/v2/translate", KEY_Q, "text=Hello&target_lang=XX");
    dl_error(&r, 400);
    assert_int_equal(usage_count(KEY_Q), before + 22);
    /* past the quota (60): 456, nothing counted */
    r = dl("POST", "/v2/translate", KEY_Q, "text=This+sentence+has+more+characters+than+are+left.&target_lang=FR");
    assert_non_null(strstr(dl_error(&r, 456), "Quota exceeded"));
    assert_int_equal(usage_count(KEY_Q), before + 22);
    reply u = dl("GET", "/v2/usage", KEY_Q, NULL);
    json_t *j = expect_json(&u, 200);
    assert_int_equal(json_integer_value(json_object_get(j, "character_limit")), 60);
    json_decref(j);
    reply_free(&u);
    /* another key counts apart; /metrics has each key's count (by index) */
    long a = usage_count(KEY_A);
    assert_true(a > 0);
    const char *auth = "Authorization: Bearer alpha-key:fx";
    assert_int_equal((long)metric_auth(&srv, "mtserve_usage_characters{key=\"1\"}", auth), before + 22);
    assert_int_equal((long)metric_auth(&srv, "mtserve_usage_characters{key=\"0\"}", auth), a);
    /* kept across a restart */
    assert_int_equal(server_stop(&srv), 0);
    FILE *f = fopen(usage_path, "r");
    assert_non_null(f);
    char line[128];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "mtserve-usage 1\n");
    while (fgets(line, sizeof line, f))
        assert_null(strstr(line, "key"));               /* hashes, never the keys */
    fclose(f);
    assert_int_equal(start(), 0);
    assert_int_equal(usage_count(KEY_Q), before + 22);
    assert_int_equal(usage_count(KEY_A), a);
}

static void test_errors(void **state)
{
    (void)state;
    reply r = dl("POST", "/v2/translate", "Authorization: DeepL-Auth-Key wrong", "text=x&target_lang=FR");
    assert_non_null(strstr(dl_error(&r, 403), "Authorization failure"));
    r = dl("GET", "/v2/usage", NULL, NULL);
    dl_error(&r, 403);
    static const struct {
        const char *body, *says;
    } bad[] = {
        { "text=x", "target_lang" },
        { "target_lang=FR", "text" },
        { "text=x&target_lang=FR&bogus=1", "bogus" },
        { "text=x&target_lang=FR&split_sentences=2", "split_sentences" },
        { "text=x&target_lang=FR&tag_handling=json", "tag_handling" },
        { "text=x&target_lang=FR&formality=more", "formality" },
        { "text=x&target_lang=FR&glossary_ids=abc", "glossary_ids" },
        { "text=x&target_lang=FR&ignore_tags=x", "ignore_tags" },
        { "text=x&target_lang=FR&preserve_formatting=maybe", "preserve_formatting" },
        { "text=x&target_lang=DE", "DE" },
        { "{\"text\": [1], \"target_lang\": \"FR\"}", "text" },
        { "{\"text\": \"x\", \"target_lang\": ", "JSON" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        r = dl("POST", "/v2/translate", KEY_A, bad[i].body);
        const char *msg = dl_error(&r, 400);
        print_message("    %s -> %s\n", bad[i].body, msg);
        assert_non_null(strstr(msg, bad[i].says));
    }
    /* the key's req-limit: 429 in DeepL's shape, with Retry-After */
    json_decref(dl_translations(KEY_R, "text=One.&target_lang=FR&source_lang=EN"));
    r = dl("POST", "/v2/translate", KEY_R, "text=Two.&target_lang=FR&source_lang=EN");
    char retry[16];
    assert_true(header(&r, "Retry-After", retry, sizeof retry));
    assert_true(atoi(retry) > 0);
    dl_error(&r, 429);
}

/* A DeepL request with a JSON body (NULL: none) and any method. */
static reply dl_json(const char *method, const char *path, const char *key, json_t *body)
{
    char *b = body ? json_dumps(body, 0) : NULL;
    req_opts o = { .method = method, .body = b, .content_type = "application/json", .extra = { key } };
    reply r = http_req(&srv, path, &o);
    free(b);
    json_decref(body);
    return r;
}

static void test_glossaries_v2(void **state)
{
    (void)state;
    const char *text = "The cat sleeps on the sofa.";
    reply r = dl("POST", "/v2/glossaries", KEY_A, "name=Pets&source_lang=EN&target_lang=fr&entries_format=tsv"
                                                  "&entries=cat%09chaton%0Asofa%09divan");
    json_t *g = expect_json(&r, 201);
    reply_free(&r);
    const char *id = json_string_value(json_object_get(g, "glossary_id"));
    assert_int_equal(strlen(id), 36);
    assert_string_equal(json_string_value(json_object_get(g, "source_lang")), "en");
    assert_string_equal(json_string_value(json_object_get(g, "target_lang")), "fr");
    assert_int_equal(json_integer_value(json_object_get(g, "entry_count")), 2);
    assert_true(json_is_true(json_object_get(g, "ready")));
    char path[128], with[512];
    /* read back: one, all, entries */
    snprintf(path, sizeof path, "/v2/glossaries/%s", id);
    r = dl("GET", path, KEY_A, NULL);
    json_t *again = expect_json(&r, 200);
    reply_free(&r);
    assert_true(json_equal(g, again));
    json_decref(again);
    r = dl("GET", "/v2/glossaries", KEY_A, NULL);
    json_t *all = expect_json(&r, 200);
    reply_free(&r);
    assert_true(json_equal(json_array_get(json_object_get(all, "glossaries"), 0), g));
    json_decref(all);
    snprintf(path, sizeof path, "/v2/glossaries/%s/entries", id);
    r = dl("GET", path, KEY_A, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "cat\tchaton\nsofa\tdivan");
    reply_free(&r);
    /* another key does not see it */
    r = dl("GET", path, KEY_Q, NULL);
    dl_error(&r, 404);
    /* translating with it is POST /translate with the same terms */
    snprintf(with, sizeof with, "text=The+cat+sleeps+on+the+sofa.&source_lang=EN&target_lang=FR&glossary_id=%s", id);
    json_t *list = dl_translations(KEY_A, with);
    char *want = ours(text, "en", "fr", "{\"glossary\": {\"cat\": \"chaton\", \"sofa\": \"divan\"}}");
    char *plain = ours(text, "en", "fr", NULL);
    print_message("    with the glossary: %s\n    without: %s\n", tr_text(list, 0), plain);
    assert_string_equal(tr_text(list, 0), want);
    assert_non_null(strstr(tr_text(list, 0), "chaton"));
    assert_string_not_equal(want, plain);
    json_decref(list);
    free(want);
    free(plain);
    /* a glossary needs the source language, and the pair must be the glossary's */
    snprintf(with, sizeof with, "text=x&target_lang=FR&glossary_id=%s", id);
    r = dl("POST", "/v2/translate", KEY_A, with);
    assert_non_null(strstr(dl_error(&r, 400), "source_lang"));
    snprintf(with, sizeof with, "text=x&source_lang=FR&target_lang=EN-US&glossary_id=%s", id);
    r = dl("POST", "/v2/translate", KEY_A, with);
    assert_non_null(strstr(dl_error(&r, 400), "fr -> en"));
    /* deleted: 204, then gone */
    snprintf(path, sizeof path, "/v2/glossaries/%s", id);
    r = dl("DELETE", path, KEY_A, NULL);
    assert_int_equal(r.status, 204);
    reply_free(&r);
    r = dl("GET", path, KEY_A, NULL);
    dl_error(&r, 404);
    snprintf(with, sizeof with, "text=x&source_lang=EN&target_lang=FR&glossary_id=%s", id);
    r = dl("POST", "/v2/translate", KEY_A, with);
    dl_error(&r, 404);
    json_decref(g);
    /* the pairs */
    r = dl("GET", "/v2/glossary-language-pairs", KEY_A, NULL);
    json_t *pairs = expect_json(&r, 200);
    reply_free(&r);
    char *ps = json_dumps(pairs, JSON_SORT_KEYS);
    assert_string_equal(ps, "{\"supported_languages\": [{\"source_lang\": \"en\", \"target_lang\": \"fr\"}, "
                            "{\"source_lang\": \"fr\", \"target_lang\": \"en\"}]}");
    free(ps);
    json_decref(pairs);
    /* refusals */
    static const struct {
        const char *body, *says;
    } bad[] = {
        { "source_lang=en&target_lang=fr&entries=a%09b", "name" },
        { "name=x&source_lang=en&target_lang=fr", "entries" },
        { "name=x&source_lang=en&target_lang=fr&entries=", "no entry" },
        { "name=x&source_lang=en&target_lang=fr&entries=a%09b%0Aa%09c", "line 2: duplicate" },
        { "name=x&source_lang=en&target_lang=fr&entries=ab", "line 1: no tab" },
        { "name=x&source_lang=en&target_lang=fr&entries=a%09b&entries_format=xlsx", "entries_format" },
        { "name=x&source_lang=en&target_lang=de&entries=a%09b", "en -> de" },
        { "name=x&source_lang=en&target_lang=en&entries=a%09b", "en -> en" },
        { "name=x&target_lang=fr&entries=a%09b", "source_lang" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        r = dl("POST", "/v2/glossaries", KEY_A, bad[i].body);
        const char *msg = dl_error(&r, 400);
        print_message("    %s -> %s\n", bad[i].body, msg);
        assert_non_null(strstr(msg, bad[i].says));
    }
    r = dl("GET", "/v2/glossaries/not-an-id", KEY_A, NULL);
    dl_error(&r, 404);
}

static void test_glossaries_v3(void **state)
{
    (void)state;
    reply r = dl_json("POST", "/v3/glossaries", KEY_A, json_pack("{s:s,s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s}]}",
        "name", "Both ways", "dictionaries",
        "source_lang", "en", "target_lang", "fr", "entries", "cat,chaton\n\"sofa, large\",divan", "entries_format", "csv",
        "source_lang", "FR", "target_lang", "en", "entries", "chat\tkitty"));
    json_t *g = expect_json(&r, 201);
    reply_free(&r);
    char id[40], path[160];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(g, "glossary_id")));
    json_t *d = json_object_get(g, "dictionaries");
    assert_int_equal(json_array_size(d), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 0), "entry_count")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(d, 1), "source_lang")), "fr");
    json_decref(g);
    /* a pair's entries */
    snprintf(path, sizeof path, "/v3/glossaries/%s/entries?source_lang=en&target_lang=fr", id);
    r = dl("GET", path, KEY_A, NULL);
    json_t *e = expect_json(&r, 200);
    reply_free(&r);
    json_t *e0 = json_array_get(json_object_get(e, "dictionaries"), 0);
    assert_string_equal(json_string_value(json_object_get(e0, "entries")), "cat\tchaton\nsofa, large\tdivan");
    assert_string_equal(json_string_value(json_object_get(e0, "entries_format")), "tsv");
    json_decref(e);
    /* v2 will not read a glossary of two pairs */
    snprintf(path, sizeof path, "/v2/glossaries/%s", id);
    r = dl("GET", path, KEY_A, NULL);
    assert_non_null(strstr(dl_error(&r, 400), "/v3/glossaries"));
    /* its fr -> en dictionary in a translation */
    char with[256];
    snprintf(with, sizeof with, "text=Le+chat+dort.&source_lang=FR&target_lang=EN-GB&glossary_id=%s", id);
    json_t *list = dl_translations(KEY_A, with);
    char *want = ours("Le chat dort.", "fr", "en", "{\"glossary\": {\"chat\": \"kitty\"}}");
    assert_string_equal(tr_text(list, 0), want);
    assert_non_null(strstr(tr_text(list, 0), "kitty"));
    free(want);
    json_decref(list);
    /* PATCH: a new name and entries merged; PUT: a pair replaced; DELETE a pair */
    snprintf(path, sizeof path, "/v3/glossaries/%s", id);
    r = dl_json("PATCH", path, KEY_A, json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "name", "Renamed", "dictionaries",
                                                "source_lang", "en", "target_lang", "fr", "entries", "dog\tchien"));
    g = expect_json(&r, 200);
    reply_free(&r);
    assert_string_equal(json_string_value(json_object_get(g, "name")), "Renamed");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(g, "dictionaries"), 0),
                                                        "entry_count")), 3);
    json_decref(g);
    snprintf(path, sizeof path, "/v3/glossaries/%s/dictionaries", id);
    r = dl("PUT", path, KEY_A, "dictionaries%5B0%5D.source_lang=en&dictionaries%5B0%5D.target_lang=fr"
                               "&dictionaries%5B0%5D.entries=bird%09oiseau&dictionaries%5B0%5D.entries_format=tsv");
    g = expect_json(&r, 200);
    reply_free(&r);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(g, "dictionaries"), 0),
                                                        "entry_count")), 1);
    json_decref(g);
    snprintf(path, sizeof path, "/v3/glossaries/%s/dictionaries?source_lang=fr&target_lang=en", id);
    r = dl("DELETE", path, KEY_A, NULL);
    assert_int_equal(r.status, 204);
    reply_free(&r);
    snprintf(path, sizeof path, "/v3/glossaries/%s", id);
    r = dl("GET", path, KEY_A, NULL);
    g = expect_json(&r, 200);
    reply_free(&r);
    assert_int_equal(json_array_size(json_object_get(g, "dictionaries")), 1);
    json_decref(g);
    /* the last pair cannot go; the glossary can */
    snprintf(path, sizeof path, "/v3/glossaries/%s/dictionaries?source_lang=en&target_lang=fr", id);
    r = dl("DELETE", path, KEY_A, NULL);
    dl_error(&r, 400);
    r = dl("GET", "/v3/glossaries", KEY_A, NULL);
    json_t *all = expect_json(&r, 200);
    reply_free(&r);
    assert_int_equal(json_array_size(json_object_get(all, "glossaries")), 1);
    json_decref(all);
    snprintf(path, sizeof path, "/v3/glossaries/%s", id);
    r = dl("DELETE", path, KEY_A, NULL);
    assert_int_equal(r.status, 204);
    reply_free(&r);
    r = dl("GET", path, KEY_A, NULL);
    dl_error(&r, 404);
    r = dl_json("POST", "/v3/glossaries", KEY_A, json_pack("{s:s}", "name", "empty"));
    assert_non_null(strstr(dl_error(&r, 400), "dictionaries"));
}

/* A multipart upload: the file part, then name=value fields (NULL-terminated pairs). */
static reply upload(const char *key, const char *filename, const char *content, const char *const *fields)
{
    static char body[8192];
    const char *b = "----mtserve-test-boundary";
    int n = snprintf(body, sizeof body, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                     "Content-Type: application/octet-stream\r\n\r\n%s\r\n", b, filename, content);
    for (int i = 0; fields && fields[i]; i += 2)
        n += snprintf(body + n, sizeof body - (size_t)n, "--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n",
                      b, fields[i], fields[i + 1]);
    n += snprintf(body + n, sizeof body - (size_t)n, "--%s--\r\n", b);
    char ct[96];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", b);
    req_opts o = { .method = "POST", .body = body, .body_len = (size_t)n, .content_type = ct, .extra = { key } };
    return http_req(&srv, "/v2/document", &o);
}

/* POST /v2/document/ID[suffix] with document_key=key. */
static reply doc_call(const char *id, const char *suffix, const char *doc_key)
{
    char path[128], body[128];
    snprintf(path, sizeof path, "/v2/document/%s%s", id, suffix);
    snprintf(body, sizeof body, "document_key=%s", doc_key);
    return dl("POST", path, KEY_A, body);
}

static void test_documents(void **state)
{
    (void)state;
    const char *text = "The cat sleeps on the sofa.\n\nIt is a nice day.\n";
    const char *const fields[] = { "target_lang", "FR", "source_lang", "EN", NULL };
    long before = usage_count(KEY_A);
    reply r = upload(KEY_A, "notes.txt", text, fields);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    char id[40], doc_key[40];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "document_id")));
    snprintf(doc_key, sizeof doc_key, "%s", json_string_value(json_object_get(j, "document_key")));
    json_decref(j);
    assert_int_equal(strlen(id), 32);
    assert_int_equal(strlen(doc_key), 32);
    assert_int_equal(usage_count(KEY_A), before + 44);      /* its units' code points: 27 + 17 */
    /* status until done (bounded), then the result once */
    const char *status = "";
    for (int i = 0; i < 600 && strcmp(status, "done"); i++) {
        r = doc_call(id, "", doc_key);
        j = expect_json(&r, 200);
        reply_free(&r);
        status = strcmp(json_string_value(json_object_get(j, "status")), "done") ? "" : "done";
        if (*status)
            assert_int_equal(json_integer_value(json_object_get(j, "billed_characters")), 44);
        json_decref(j);
        if (!*status)
            sleep_ms(50);
    }
    assert_string_equal(status, "done");
    r = doc_call(id, "/result", doc_key);
    assert_int_equal(r.status, 200);
    char *want1 = ours("The cat sleeps on the sofa.", "en", "fr", NULL), *want2 = ours("It is a nice day.", "en", "fr", NULL);
    char expect[512];
    snprintf(expect, sizeof expect, "%s\n\n%s\n", want1, want2);
    print_message("    document: %s", r.body);
    assert_string_equal(r.body, expect);                 /* each paragraph as POST /translate has it */
    free(want1);
    free(want2);
    reply_free(&r);
    r = doc_call(id, "/result", doc_key);                /* downloaded: gone */
    dl_error(&r, 404);
    /* a wrong key or id, and no key: 404, 404, 400 */
    r = upload(KEY_A, "b.txt", "Hello.", fields);
    j = expect_json(&r, 200);
    reply_free(&r);
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "document_id")));
    json_decref(j);
    r = doc_call(id, "", "0123456789abcdef0123456789abcdef");
    dl_error(&r, 404);
    r = doc_call("ffffffffffffffffffffffffffffffff", "", doc_key);
    dl_error(&r, 404);
    char path[96];
    snprintf(path, sizeof path, "/v2/document/%s", id);
    r = dl("POST", path, KEY_A, "");
    assert_non_null(strstr(dl_error(&r, 400), "document_key"));
    /* refusals */
    const char *const bad_lang[] = { "target_lang", "DE", NULL }, *const no_target[] = { "source_lang", "EN", NULL };
    const char *const bad_field[] = { "target_lang", "FR", "speed", "fast", NULL };
    const char *const bad_out[] = { "target_lang", "FR", "output_format", "pdf", NULL };
    r = upload(KEY_A, "a.txt", "Hello.", bad_lang);
    dl_error(&r, 400);
    r = upload(KEY_A, "a.txt", "Hello.", no_target);
    assert_non_null(strstr(dl_error(&r, 400), "target_lang"));
    r = upload(KEY_A, "a.txt", "Hello.", bad_field);
    assert_non_null(strstr(dl_error(&r, 400), "speed"));
    r = upload(KEY_A, "a.txt", "Hello.", bad_out);
    assert_non_null(strstr(dl_error(&r, 400), "output_format"));
    r = upload(KEY_A, "a.pdf", "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj", fields);
    assert_non_null(strstr(dl_error(&r, 400), "no format"));
    /* past the quota: 456, nothing counted */
    long q = usage_count(KEY_Q);
    r = upload(KEY_Q, "long.txt", "This document has many more characters than the quota key has left for it.", fields);
    dl_error(&r, 456);
    assert_int_equal(usage_count(KEY_Q), q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_translate_form),
        cmocka_unit_test(test_translate_json_detected),
        cmocka_unit_test(test_split_sentences),
        cmocka_unit_test(test_tag_handling),
        cmocka_unit_test(test_tag_handling_xml),
        cmocka_unit_test(test_query_fields),
        cmocka_unit_test(test_languages),
        cmocka_unit_test(test_usage_and_quota),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_glossaries_v2),
        cmocka_unit_test(test_glossaries_v3),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    kill_all_children();
    return rc;
}
