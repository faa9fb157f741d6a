// The text of `shoal --version`: version, git revision and the backends compiled in.
#pragma once

#include <string>

namespace shoal::agent {

std::string version_text();

}  // namespace shoal::agent
