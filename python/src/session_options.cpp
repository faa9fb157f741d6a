// SessionOptions from Python keywords, through the one table of session_options.hpp.
#include "session_options.hpp"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <utility>

namespace shoal::python {
namespace {

// Counts an aggregate's fields: the most AnyField values it can be brace-initialised from.
struct AnyField {
  template <class T>
  operator T() const;
};

template <class T, class... A>
constexpr size_t field_count() {
  if constexpr (requires { T{std::declval<A>()..., AnyField{}}; }) {
    return field_count<T, A..., AnyField>();
  } else {
    return sizeof...(A);
  }
}

#define SHOAL_COUNT_ONE(field) +1
constexpr size_t kTableSize = 0 SHOAL_SESSION_OPTIONS(SHOAL_COUNT_ONE);
#undef SHOAL_COUNT_ONE
static_assert(field_count<SessionOptions>() == kTableSize,
              "SessionOptions and SHOAL_SESSION_OPTIONS (python/src/session_options.hpp) differ: add the new field "
              "to the table, so that Python's Session.start takes it too");

template <class T>
void set_from(T& field, py::handle value, const char* name) {
  try {
    field = value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string("Session.start: ") + name + " takes " + py::type_id<T>() + ", not " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  }
}

void set_from(std::chrono::milliseconds& field, py::handle value, const char* name) {
  double seconds = 0;
  try {
    seconds = value.cast<double>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string("Session.start: ") + name + " takes seconds (a number)");
  }
  field = milliseconds_from(seconds, name);
}

py::object to_python(const std::chrono::milliseconds& v) { return py::float_(double(v.count()) / 1000.0); }
template <class T>
py::object to_python(const T& v) {
  return py::cast(v);
}

}  // namespace

const std::vector<std::string>& session_option_names() {
#define SHOAL_NAME(field) #field,
  static const std::vector<std::string> names{SHOAL_SESSION_OPTIONS(SHOAL_NAME)};
#undef SHOAL_NAME
  return names;
}

void apply_session_options(SessionOptions& o, const py::kwargs& kwargs) {
  for (const auto& [key, value] : kwargs) {
    const std::string k = py::str(key);
    bool known = false;
#define SHOAL_APPLY(field)            \
  if (k == #field) {                  \
    set_from(o.field, value, #field); \
    known = true;                     \
  }
    SHOAL_SESSION_OPTIONS(SHOAL_APPLY)
#undef SHOAL_APPLY
    if (!known) {
      std::string valid;
      for (const auto& n : session_option_names()) valid += (valid.empty() ? "" : ", ") + n;
      throw py::type_error("Session.start got an unknown option '" + k + "'; the options are: " + valid);
    }
  }
}

py::dict session_option_defaults() {
  const SessionOptions o;
  py::dict d;
#define SHOAL_DEFAULT(field) d[#field] = to_python(o.field);
  SHOAL_SESSION_OPTIONS(SHOAL_DEFAULT)
#undef SHOAL_DEFAULT
  return d;
}

}  // namespace shoal::python
