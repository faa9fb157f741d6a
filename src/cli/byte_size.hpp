// Byte counts as people read them in the CLI's tables: "512 B", "48.0 MiB", "1.50 GiB".
#pragma once

#include <cstdint>
#include <string>

namespace shoal::cli {

std::string human_bytes(uint64_t bytes);

}  // namespace shoal::cli
