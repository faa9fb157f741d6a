// libshoal's version, for trainers that link it: the release and the git revision it was built from.
#pragma once

#include <string_view>

namespace shoal::build {

std::string_view version();
std::string_view git_revision();

}  // namespace shoal::build
