/* openapi: GET /openapi.json's document, server/api/openapi.json, embedded in the
 * binary at build time (the assembler's .incbin: no code generator, no copy
 * in C string literals to keep in step).  The Makefile rebuilds this object
 * when the JSON changes; tests/test_server_units.c checks that the document
 * parses and names every route of routes.c and every error code of errors.c.
 * The limits of the decoding fields are served from the engine's table
 * (info_api.c), which the unit tests compare too. */
#include "handlers.h"

/* The path is relative to the directory make runs in (the repository root). */
__asm__(".section .rodata\n"
        ".global srv_openapi_json\n"
        ".type srv_openapi_json, @object\n"
        ".balign 16\n"
        "srv_openapi_json:\n"
        ".incbin \"server/api/openapi.json\"\n"
        ".byte 0\n"
        ".size srv_openapi_json, . - srv_openapi_json\n"
        ".previous\n");
