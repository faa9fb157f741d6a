// Precompiled headers of the I/O layers (net and above): those of the cores, plus Asio and nlohmann-json,
// which their files parse again and again. See core_pch.hpp for how meson uses it.

#include "core_pch.hpp"

#include <boost/asio.hpp>
#include <condition_variable>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
