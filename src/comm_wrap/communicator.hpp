// The communicator interface is public (include/shoal/communicator.hpp); inside shoal it is spelled
// comm::Communicator, with the helpers the backends share.
#pragma once

#include <cstddef>

#include "shoal/communicator.hpp"
#include "shoal/errors.hpp"

namespace shoal::comm {

using shoal::Communicator;
using shoal::DataType;
using shoal::ReduceOp;

size_t size_of(DataType t);
const char* to_string(DataType t);
const char* to_string(ReduceOp op);

}  // namespace shoal::comm
