// libshoal's version, for trainers that link it: the release and the git revision it was built from.
#pragma once

#include <string_view>

#include "shoal/api.hpp"

namespace shoal::build {

SHOAL_API std::string_view version();
SHOAL_API std::string_view git_revision();

}  // namespace shoal::build
