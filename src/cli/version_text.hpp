// The text of `shoal --version`: version, git revision and the backends compiled in.
#pragma once

#include <string>

namespace shoal::cli {

std::string version_text();

}  // namespace shoal::cli
