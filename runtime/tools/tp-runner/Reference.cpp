//===- Reference.cpp - Outputs compared with a reference file -------------===//

#include "Reference.h"

#include "Init.h"

#include <cmath>
#include <cstdio>

using namespace tprun;

double tprun::defaultReferenceTolerance(DType dtype) {
  return dtype == DType::BF16 || dtype == DType::F16 ? 2e-2 : 1e-5;
}

bool tprun::compareWithReference(const Buffer &output,
                                 const std::vector<char> &data,
                                 const Checkpoint &reference,
                                 const CheckpointTensor &tensor, double limit,
                                 std::string &error) {
  DType stored = output.dtype;
  dtypeOfSafetensors(tensor.dtype, stored); // checked by Sources::plan
  const char *expected = reference.data(tensor);
  int64_t count = output.globalElements();
  double maxDiff = 0, maxRef = 0;
  int64_t worst = 0;
  bool sawNaN = false;
  for (int64_t i = 0; i < count; ++i) {
    double a = loadDouble(output.dtype, data.data(), i);
    double b = loadDouble(stored, expected, i);
    if (std::isfinite(b))
      maxRef = std::max(maxRef, std::fabs(b));
    double diff = a == b ? 0.0 : std::fabs(a - b);
    if (std::isnan(diff)) {
      if (!sawNaN)
        worst = i;
      sawNaN = true;
    } else if (!sawNaN && diff > maxDiff) {
      maxDiff = diff;
      worst = i;
    }
  }
  double relative = sawNaN ? NAN : maxRef > 0 ? maxDiff / maxRef : maxDiff;
  bool match = std::isfinite(relative) && relative <= limit;
  std::printf("%s: %s %.1e (relative, limit %g)\n", output.name.c_str(),
              match ? "matches reference to" : "differs from reference by",
              relative, limit);
  if (match)
    return true;
  std::vector<int64_t> position(output.globalShape.size());
  for (size_t d = position.size(), rest = size_t(worst); d-- > 0;) {
    position[d] = int64_t(rest % size_t(output.globalShape[d]));
    rest /= size_t(output.globalShape[d]);
  }
  char values[96];
  std::snprintf(values, sizeof(values), "%.9g against %.9g",
                loadDouble(output.dtype, data.data(), worst),
                loadDouble(stored, expected, worst));
  char numbers[64];
  std::snprintf(numbers, sizeof(numbers), "%.1e (limit %g)", relative, limit);
  error = "output " + std::to_string(output.index) + " \"" + output.name +
          "\" does not match reference " + reference.fileOf(tensor) +
          ": relative error " + numbers + ", worst at index " +
          shapeText(position) + ": " + values;
  return false;
}
