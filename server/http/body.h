/* body: request bodies -> JSON, and typed field access that names the field.
 *
 * JSON bodies are parsed with jansson; form bodies (urlencoded or multipart,
 * what LibreTranslate clients may send) become a JSON object of string
 * values.  The field getters accept a form's strings where a number or a
 * boolean is expected, and fail with SRV_E_INVALID_FIELD naming the field.
 */
#ifndef SRV_BODY_H
#define SRV_BODY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "request.h"


/* Parses "a=1&b=x+y%21" into {"a":"1","b":"x y!"}.  A repeated name's values
 * become an array when lists ("text=a&text=b": {"text":["a","b"]}, DeepL's
 * way of sending several texts), else the last one is kept.  NULL on a
 * malformed escape or invalid UTF-8 after decoding (message in err). */
json_t *srv_form_parse(const char *body, size_t len, int lists, char *err, size_t err_len);

/* Parses a multipart/form-data body (what a browser's FormData sends) into
 * {"name": "value", ...}; file parts are skipped.  NULL with a message on a
 * malformed body. */
json_t *srv_multipart_parse(const char *body, size_t len, const char *content_type, char *err,
                            size_t err_len);

/* The part named field of a multipart/form-data body (a file, or any part):
 * *data and *dlen point into body (not copied), its filename parameter is
 * copied into filename ("" when none or longer than fn_len).  1 found, 0 not
 * there, -1 a malformed body (message in err). */
int srv_multipart_file(const char *body, size_t len, const char *content_type, const char *field,
                       const char **data, size_t *dlen, char *filename, size_t fn_len, char *err, size_t err_len);

/* 1 when req's body is a form (what srv_body_parse parses as one): its
 * Content-Type is urlencoded or multipart and the body does not open with '{'
 * (`curl -d '{...}'` labels JSON as a form). */
int srv_body_is_form(const srv_request *req);

/* Parses req->body into req->json by Content-Type; 0, or -1 with resp failed. */
int srv_body_parse(srv_request *req, srv_response *resp);

/* Field getters on req->json.  Return 1 when the field is present and valid
 * (*out set), 0 when absent or null (*out untouched), -1 when invalid (resp
 * failed with a message naming the field).  A name "obj.key" is the member
 * key of the object field obj. */
int srv_field_string(const srv_request *req, srv_response *resp, const char *name, const char **out);
int srv_field_int(const srv_request *req, srv_response *resp, const char *name, int min, int max,
                  int *out);
int srv_field_bool(const srv_request *req, srv_response *resp, const char *name, int *out);
int srv_field_int64(const srv_request *req, srv_response *resp, const char *name, long long min, long long max,
                    long long *out);
/* A finite number in [min, max] ((min, max] when open_min). */
int srv_field_number(const srv_request *req, srv_response *resp, const char *name, double min, double max,
                     int open_min, double *out);
/* An object whose members are all among keys (NULL-terminated). */
int srv_field_object(const srv_request *req, srv_response *resp, const char *name, const char *const *keys,
                     json_t **out);
/* A list of ints, each in [min, max]; *out is malloc'd. */
int srv_field_int_list(const srv_request *req, srv_response *resp, const char *name, int min,
                       int max, int **out, int *n);

/* A "string or array of strings" field.  *texts (malloc'd array of borrowed
 * strings, valid while req->json lives) gets n entries; *is_list tells which
 * form was used.  Empty or whitespace-only strings fail with SRV_E_EMPTY_TEXT. */
int srv_field_texts(const srv_request *req, srv_response *resp, const char *name,
                    const char ***texts, int *n, int *is_list);

/* 1 when s holds only whitespace (ASCII or Unicode spaces). */
int srv_is_blank(const char *s, size_t len);

#endif
