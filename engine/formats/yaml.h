/* yaml.h: a small, bounded parser for the YAML that Marian writes (its
 * decoder.yml, the model.yml inside a .npz, vocabulary .yml files), giving a
 * jansson tree.  Only a subset of YAML 1.2, each node on one line:
 *
 *   - block mappings ("key: value") and block sequences ("- item"), the
 *     latter also at the indentation of their parent key (as yaml-cpp writes
 *     them) and in compact form ("- - a", "- key: value");
 *   - flow sequences and mappings on one line: [a, b], {k: v}, [], {};
 *   - plain, 'single-quoted' ('' for ') and "double-quoted" scalars with
 *     YAML's escapes (\" \\ \/ \n \t \r \a \b \e \f \v \N \_ \L \P \<space>
 *     \xXX \uXXXX \UXXXXXXXX, decoded to UTF-8; \0 is refused, see below);
 *   - comments, blank lines, a leading "---" and a final "...".
 *
 * Types: a quoted scalar is always a string, and a mapping key is always the
 * key's text as a string (a vocabulary piece "1", true or null stays that
 * string).  A plain value is typed like YAML's core schema: null (~, null,
 * empty), true/false, a decimal integer that fits in 64 bits, a finite
 * decimal float (0.6, 1e-09); anything else is a string.
 *
 * Refused, naming the file and line: anchors, aliases, tags, block scalars
 * (| >), complex keys (?), directives, several documents, scalars or flow
 * collections spread over several lines, tabs in indentation, duplicate
 * keys, NUL characters and invalid UTF-8.  Untrusted input: the text is at
 * most MT_YAML_MAX_BYTES and nodes nest at most MT_YAML_MAX_DEPTH deep.
 */
#ifndef MT_YAML_H
#define MT_YAML_H

#include <stddef.h>

#include <jansson.h>

#include "util/status.h"

#define MT_YAML_MAX_BYTES ((size_t)64 << 20)
#define MT_YAML_MAX_DEPTH 64

/* Parse text[0..len) (UTF-8, an optional BOM) into *out: an object, array,
 * scalar, or json null for an empty document.  name is used only in error
 * messages ("name:line: ...").  MT_ERR_FORMAT for malformed YAML or a limit
 * exceeded, MT_ERR_UNSUPPORTED for YAML outside the subset, MT_ERR_NOMEM.
 * On failure *out is NULL.  The caller owns *out (json_decref). */
mt_status mt_yaml_parse(const char *name, const char *text, size_t len, json_t **out, mt_err *err);

/* Read the file at path and parse it as above; MT_ERR_IO when it cannot be
 * read, MT_ERR_FORMAT when it is larger than MT_YAML_MAX_BYTES. */
mt_status mt_yaml_load(const char *path, json_t **out, mt_err *err);

#endif
