/* openapi: the API documents, embedded in the binary at build time (the
 * assembler's .incbin: no code generator, no copy in C string literals to
 * keep in step):
 *   server/api/openapi.json              GET /openapi.json, ours (OpenAPI 3)
 *   server/api/libretranslate_spec.json  GET /spec, LibreTranslate's (Swagger 2.0,
 *                                        its info as LibreTranslate v1.9.6 gives it)
 * The Makefile rebuilds this object when either JSON changes;
 * tests/test_server_units.c checks that openapi.json parses and names every
 * route of routes.c and every error code of errors.c, and that
 * libretranslate_spec.json names the LibreTranslate routes served.  The
 * limits of the decoding fields are served from the engine's table
 * (info_api.c), which the unit tests compare too. */
#include "handlers.h"

/* The paths are relative to the directory make runs in (the repository root). */
__asm__(".section .rodata\n"
        ".global srv_openapi_json\n"
        ".type srv_openapi_json, @object\n"
        ".balign 16\n"
        "srv_openapi_json:\n"
        ".incbin \"server/api/openapi.json\"\n"
        ".byte 0\n"
        ".size srv_openapi_json, . - srv_openapi_json\n"
        ".global srv_lt_spec_json\n"
        ".type srv_lt_spec_json, @object\n"
        ".balign 16\n"
        "srv_lt_spec_json:\n"
        ".incbin \"server/api/libretranslate_spec.json\"\n"
        ".byte 0\n"
        ".size srv_lt_spec_json, . - srv_lt_spec_json\n"
        ".previous\n");
