// jitllm command line: subcommand dispatch. Only this layer prints errors and picks exit codes.
#include <cstdio>

#include "core/error.h"

int main(int argc, char** argv) {
    std::fprintf(stderr, "jitllm: under construction\n");
    return 1;
}
