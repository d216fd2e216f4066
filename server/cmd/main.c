/* mtserve: one binary, three commands.
 *   mtserve translate [--model DIR] [--beam N] [--json]   stdin lines -> translations
 *   mtserve serve     [--model DIR]... [--host H] [--port P] ...   the HTTP service
 *   mtserve health    [--host H] [--port P]                 exit 0 when /health answers 200
 *   mtserve pull      org/name[@rev] | --pair SRC-TGT       a model from the Hugging Face Hub
 *   mtserve models    [--json]                              what the Hugging Face cache holds
 *   mtserve rm        org/name[@rev]...                     removed from that cache
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: mtserve <command> [options]\n"
               "commands:\n"
               "  translate   translate stdin, one sentence per line\n"
               "  serve       run the HTTP service\n"
               "  health      exit 0 when a running server's /health answers 200\n"
               "  shortlist   build a lexical shortlist from a parallel corpus\n"
               "  pull        download a model org/name[@rev] (or --pair SRC-TGT) from the Hugging Face Hub into its cache\n"
               "  models      list the models of the Hugging Face cache, their size and whether they load\n"
               "  rm          remove a model org/name[@rev] from the Hugging Face cache\n"
               "run 'mtserve <command> --help' for the options of a command\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "translate") == 0)
        return mt_cmd_translate(argc - 1, argv + 1);
    if (strcmp(argv[1], "serve") == 0)
        return mt_cmd_serve(argc - 1, argv + 1);
    if (strcmp(argv[1], "health") == 0)
        return mt_cmd_health(argc - 1, argv + 1);
    if (strcmp(argv[1], "pull") == 0)
        return mt_cmd_pull(argc - 1, argv + 1);
    if (strcmp(argv[1], "models") == 0)
        return mt_cmd_models(argc - 1, argv + 1);
    if (strcmp(argv[1], "rm") == 0)
        return mt_cmd_rm(argc - 1, argv + 1);
    if (strcmp(argv[1], "shortlist") == 0)
        return mt_cmd_shortlist(argc - 1, argv + 1);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "mtserve: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
