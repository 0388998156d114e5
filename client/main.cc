// blocktune: the command-line client of blocktuned. See `blocktune --help`.
#include "client/cli.h"

int main(int argc, char** argv) { return blocktune::RunCli(argc, argv); }
