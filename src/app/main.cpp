// fobench: the command line is src/app/cli.cpp, callable in-process by the tests.
#include "commands.h"

int main(int argc, char** argv) {
  return fob::cli_main(argc, argv);
}
