// The CLI's one byte-count formatter: units switch at exactly 1 MiB and 1 GiB.
#include "cli/byte_size.hpp"

#include <doctest/doctest.h>

using shoal::cli::human_bytes;

TEST_CASE("byte counts below a MiB are whole bytes, above are MiB with one decimal, GiB with two") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(1048575) == "1048575 B");
  CHECK(human_bytes(1048576) == "1.0 MiB");
  CHECK(human_bytes(48u << 20) == "48.0 MiB");
  CHECK(human_bytes((uint64_t{1} << 30) - 1) == "1024.0 MiB");
  CHECK(human_bytes(uint64_t{3} << 29) == "1.50 GiB");
  CHECK(human_bytes(uint64_t{1} << 40) == "1024.00 GiB");
}
