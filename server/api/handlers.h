/* handlers: every endpoint handler, and the file it lives in.  What a
 * handler sees and returns (srv_request, srv_response) is the HTTP layer's
 * (http/request.h).
 *
 * Where each endpoint lives:
 *     POST /translate          translate_api.c  (LibreTranslate bodies: libretranslate_api.c)
 *     GET  /languages          libretranslate_api.c
 *     POST /detect             libretranslate_api.c  (LibreTranslate's {"q"}, and our {"text"})
 *     GET  /spec, POST /suggest   libretranslate_api.c  (LibreTranslate's; /suggest always 403)
 *     GET  /frontend/settings  frontend_api.c  (LibreTranslate's web front end)
 *     POST /attention          attention_api.c
 *     POST /score              score_api.c
 *     POST /tokenize, /detokenize   tokenize_api.c
 *     GET  /health, /models, /metrics, /openapi.json   info_api.c
 *     GET  /, /web/NAME        web_api.c  (the demo page, with --web DIR)
 *     POST /translate_file, GET|DELETE /translate_file/ID, GET /download_file/ID/NAME   file_api.c
 *     POST /v2/translate, GET|POST /v2/languages, GET|POST /v2/usage   deepl_api.c  (DeepL's API)
 *     /v2/glossaries..., /v3/glossaries..., GET /v2/glossary-language-pairs   deepl_glossary_api.c
 *     POST /v2/document, POST /v2/document/ID[/result]   deepl_document_api.c
 *     POST|GET /admin/models, DELETE /admin/models/ID   admin_api.c  (--admin-key)
 */
#ifndef SRV_HANDLERS_H
#define SRV_HANDLERS_H

#include "http/request.h"

/* ---- the handlers ------------------------------------------------------- */
void srv_handle_translate(srv_request *req, srv_response *resp);     /* translate_api.c */
void srv_handle_lt_translate(srv_request *req, srv_response *resp);  /* libretranslate_api.c */
void srv_handle_languages(srv_request *req, srv_response *resp);     /* libretranslate_api.c */
void srv_handle_detect(srv_request *req, srv_response *resp);        /* libretranslate_api.c */
void srv_handle_lt_spec(srv_request *req, srv_response *resp);       /* libretranslate_api.c */
void srv_handle_lt_suggest(srv_request *req, srv_response *resp);    /* libretranslate_api.c */
void srv_handle_frontend_settings(srv_request *req, srv_response *resp);  /* frontend_api.c */
void srv_handle_attention(srv_request *req, srv_response *resp);     /* attention_api.c */
void srv_handle_score(srv_request *req, srv_response *resp);         /* score_api.c */
void srv_handle_tokenize(srv_request *req, srv_response *resp);      /* tokenize_api.c */
void srv_handle_detokenize(srv_request *req, srv_response *resp);    /* tokenize_api.c */
void srv_handle_health(srv_request *req, srv_response *resp);        /* info_api.c */
void srv_handle_models(srv_request *req, srv_response *resp);        /* info_api.c */
void srv_handle_oai_chat(srv_request *req, srv_response *resp);      /* openai_api.c */
void srv_handle_oai_completions(srv_request *req, srv_response *resp);
void srv_handle_oai_models(srv_request *req, srv_response *resp);
void srv_handle_metrics(srv_request *req, srv_response *resp);       /* info_api.c */
void srv_handle_admin_models(srv_request *req, srv_response *resp);  /* admin_api.c */
void srv_handle_admin_model(srv_request *req, srv_response *resp);   /* admin_api.c */
void srv_handle_openapi(srv_request *req, srv_response *resp);       /* info_api.c */
void srv_handle_web(srv_request *req, srv_response *resp);           /* web_api.c */
void srv_handle_translate_file(srv_request *req, srv_response *resp);  /* file_api.c */
void srv_handle_file_status(srv_request *req, srv_response *resp);   /* file_api.c: GET, DELETE */
void srv_handle_download_file(srv_request *req, srv_response *resp); /* file_api.c */

void srv_handle_deepl_translate(srv_request *req, srv_response *resp);  /* deepl_api.c */
void srv_handle_deepl_languages(srv_request *req, srv_response *resp);  /* deepl_api.c */
void srv_handle_deepl_usage(srv_request *req, srv_response *resp);      /* deepl_api.c */
void srv_handle_deepl_glossaries(srv_request *req, srv_response *resp);     /* deepl_glossary_api.c: v2 */
void srv_handle_deepl_glossaries_v3(srv_request *req, srv_response *resp);  /* deepl_glossary_api.c */
void srv_handle_deepl_glossary_pairs(srv_request *req, srv_response *resp); /* deepl_glossary_api.c */
void srv_handle_deepl_document(srv_request *req, srv_response *resp);        /* deepl_document_api.c */
void srv_handle_deepl_document_status(srv_request *req, srv_response *resp); /* deepl_document_api.c: and result */

/* The OpenAPI 3 document served by GET /openapi.json (openapi.c, openapi.json). */
extern const char srv_openapi_json[];
/* LibreTranslate's Swagger 2.0 document, served by GET /spec (openapi.c,
 * libretranslate_spec.json). */
extern const char srv_lt_spec_json[];

#endif
