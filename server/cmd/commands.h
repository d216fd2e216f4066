/* The binary's subcommands; each returns the process exit status. */
#ifndef MT_COMMANDS_H
#define MT_COMMANDS_H

int mt_cmd_translate(int argc, char **argv);   /* server/cmd/cmd_translate.c */
int mt_cmd_serve(int argc, char **argv);       /* server/cmd/serve.c */
int mt_cmd_health(int argc, char **argv);
int mt_cmd_shortlist(int argc, char **argv);   /* server/cmd/cmd_shortlist.c */      /* server/cmd/cmd_health.c */

#endif
