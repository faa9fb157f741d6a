// Names of member states, as they appear in logs, events and JSON.
#include "gossip/types.hpp"

namespace shoal::gossip {

const char* to_string(State s) {
  switch (s) {
    case State::alive:
      return "alive";
    case State::suspect:
      return "suspect";
    case State::dead:
      return "dead";
    case State::left:
      return "left";
  }
  return "unknown";
}

}  // namespace shoal::gossip
