// Result<T, E>: a value or an error a caller can act on. Recoverable failures return this; exceptions
// are kept for the public API boundary.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace shoal {

// The default error: a sentence for a person.
struct Failure {
  std::string message;
};

template <class E>
struct Unexpected {
  E error;
};

template <class E>
Unexpected<E> fail(E e) {
  return Unexpected<E>{std::move(e)};
}
inline Unexpected<Failure> fail(std::string message) { return Unexpected<Failure>{Failure{std::move(message)}}; }
// A literal would otherwise pick the template above (E = const char*) and build Failure from it with
// parenthesised aggregate init, which GCC accepts and clang before 16 does not.
inline Unexpected<Failure> fail(const char* message) { return fail(std::string(message)); }

template <class T, class E = Failure>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  template <class E2>
  Result(Unexpected<E2> u) : v_(std::in_place_index<1>, E(std::move(u.error))) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

// For operations that return nothing on success.
struct Ok {};
using Status = Result<Ok>;

}  // namespace shoal
