// The local trainers' latest run figures.
#include "daemon/trainer_board.hpp"

namespace shoal::daemon {

void TrainerBoard::update(uint32_t slot, health::TrainerStats stats, Clock::time_point now) {
  Entry& e = ranks_[slot];
  e.stats = std::move(stats);
  e.received = now;
  ++e.reports;
  ++reports_;
}

}  // namespace shoal::daemon
