/* The commands main() dispatches to. Each returns pysnip's exit status (DESIGN.md section 2):
 * 0 ran, 1 usage or policy error, 2 internal error. */
#ifndef PS_COMMANDS_H
#define PS_COMMANDS_H

enum { PS_EXIT_OK = 0, PS_EXIT_USAGE = 1, PS_EXIT_INTERNAL = 2 };

int ps_cmd_exec(int argc, char **argv);
int ps_cmd_check_policy(int argc, char **argv);
int ps_cmd_serve(int argc, char **argv);
int ps_cmd_zygote(int argc, char **argv);	/* internal: started by serve */

#endif
