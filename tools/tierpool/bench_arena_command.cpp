// placeholder: being written
#include "commands.hpp"
#include <cstdio>
namespace tierpool::cli {
int bench_arena_command(int, char**) { std::puts("tierpool bench arena: not yet implemented"); return 0; }
}  // namespace tierpool::cli
