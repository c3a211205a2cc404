/* The commands main() dispatches to. Each returns pysnip's exit status (DESIGN.md section 2):
 * 0 ran, 1 usage or policy error, 2 internal error. */
#ifndef PS_COMMANDS_H
#define PS_COMMANDS_H

#include "util/util.h"

int ps_cmd_exec(int argc, char **argv);
int ps_cmd_check_policy(int argc, char **argv);
int ps_cmd_serve(int argc, char **argv);
int ps_cmd_session(int argc, char **argv);

#endif
