/* The binary's subcommands; each returns the process exit status. */
#ifndef MT_COMMANDS_H
#define MT_COMMANDS_H

#include "common/options.h"

int mt_cmd_translate(int argc, char **argv);   /* server/cmd/cmd_translate.c */
int mt_cmd_serve(int argc, char **argv);       /* server/cmd/serve.c */
int mt_cmd_health(int argc, char **argv);
int mt_cmd_shortlist(int argc, char **argv);   /* server/cmd/cmd_shortlist.c */      /* server/cmd/cmd_health.c */
int mt_cmd_pull(int argc, char **argv);        /* server/cmd/cmd_pull.c */
int mt_cmd_models(int argc, char **argv);      /* server/cmd/cmd_models.c */
int mt_cmd_rm(int argc, char **argv);          /* server/cmd/cmd_models.c */

/* serve's --model names given as org/name[@rev], before anything loads (cmd_pull.c):
 * one in the Hugging Face cache is replaced by its snapshot directory; one not there
 * yet is moved from o->models into later[*n_later] (its dir the name), to be
 * downloaded once the server listens (service/admin.h); with HF_HUB_OFFLINE=1 one not
 * there is an error.  0, or -1 with the reason printed. */
int mt_hub_resolve_models(srv_options *o, srv_model_spec later[SRV_MAX_MODELS], int *n_later);
/* one name: 0 when it is no hub name (dir untouched), 1 with its snapshot in dir, -1 printed */
int mt_hub_resolve_dir(const char *name, char *dir, size_t cap);
/* serve's --pair SRC-TGT: each replaced in argv by --model of its OPUS-MT repository (two
 * through English when the pair has none); -1 with the reason printed */
int mt_hub_expand_pairs(int *argc, char ***argv);


#endif
