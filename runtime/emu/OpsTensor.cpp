//===- OpsTensor.cpp - Tensor-core fragments: mma.sync and ldmatrix ------===//
//
// Not yet: the decoder says so, and the module does not load.
//
//===----------------------------------------------------------------------===//

#include "Decode.h"

using namespace tprt::emu;

bool tprt::emu::decodeTensor(const Statement &, Inst &, DecodeContext &,
                             std::string &, bool &known) {
  known = false;
  return false;
}
