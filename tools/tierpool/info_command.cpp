// placeholder: being written
#include "commands.hpp"
#include <cstdio>
namespace tierpool::cli {
int info_command(int, char**) { std::puts("tierpool info: not yet implemented"); return 0; }
}  // namespace tierpool::cli
