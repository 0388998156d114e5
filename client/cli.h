// The blocktune command-line interface. RunCli parses argv, runs one
// subcommand and returns the process exit code:
//   0 ok, 2 usage (bad flags or values; nothing was sent),
//   3 server unreachable, 4 server error (including "no data yet").
// Results go to stdout (as JSON with --json), diagnostics to stderr.
#ifndef BLOCKTUNE_CLIENT_CLI_H_
#define BLOCKTUNE_CLIENT_CLI_H_

namespace blocktune {

int RunCli(int argc, char** argv);

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_CLI_H_
