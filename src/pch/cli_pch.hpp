// Precompiled headers of the command line (cli, ops): those of the I/O layers, plus CLI11. See
// core_pch.hpp for how meson uses it.

#include "io_pch.hpp"

#include <CLI/CLI.hpp>
