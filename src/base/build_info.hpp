// What this build is: its version and the git revision (declared in the public header).
#pragma once

#include "shoal/version.hpp"
