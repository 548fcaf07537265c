#include "bench/cli/commands.h"

int main(int argc, char** argv) { return flashio::flashio_main(argc, argv); }
