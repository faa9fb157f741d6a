// Element sizes and names of the communicator's data types and reduction operations.
#include "comm_wrap/communicator.hpp"

namespace shoal::comm {

size_t size_of(DataType t) {
  switch (t) {
    case DataType::f32: return 4;
    case DataType::f64: return 8;
    case DataType::i32: return 4;
    case DataType::i64: return 8;
    case DataType::bf16: return 2;
    case DataType::f16: return 2;
  }
  return 0;
}

const char* to_string(DataType t) {
  switch (t) {
    case DataType::f32: return "f32";
    case DataType::f64: return "f64";
    case DataType::i32: return "i32";
    case DataType::i64: return "i64";
    case DataType::bf16: return "bf16";
    case DataType::f16: return "f16";
  }
  return "unknown";
}

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
  }
  return "unknown";
}

}  // namespace shoal::comm
