// Precompiled headers of the core layers (base to ckpt_shm): the standard library, fmt and spdlog, and
// Protobuf, which nearly every file of these layers parses. Meson builds it once per library (cpp_pch)
// and puts it first in each of its files; a file still includes what it uses, so it builds without it.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/arena.h>
#include <google/protobuf/message.h>
#include <spdlog/spdlog.h>
