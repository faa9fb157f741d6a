// Paxos acceptor rules: promise on >=, accept on >=, remember the highest accepted value.
#include "membership/acceptor.hpp"

namespace shoal::membership {

void Acceptor::reset(uint64_t epoch) {
  epoch_ = epoch;
  promised_ = Ballot{};
  accepted_ballot_.reset();
  accepted_.reset();
}

bool Acceptor::prepare(const Ballot& b) {
  if (b < promised_) return false;
  promised_ = b;
  return true;
}

bool Acceptor::accept(const Ballot& b, const View& value) {
  if (b < promised_) return false;
  promised_ = b;
  accepted_ballot_ = b;
  accepted_ = value;
  return true;
}

}  // namespace shoal::membership
