#include <gtest/gtest.h>
// placeholder: being written
TEST(Placeholder, Builds) { SUCCEED(); }
