//===- Init.cpp - Initial values and element conversions ------------------===//

#include "Init.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace tprun;

static const uint64_t kGolden = 0x9E3779B97F4A7C15u;

uint64_t tprun::splitmix64(uint64_t x) {
  uint64_t z = x + kGolden;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

/// A double in (0, 1]: the top 53 bits, plus one, times 2^-53.
static double unit(uint64_t x) {
  return double((splitmix64(x) >> 11) + 1) * 0x1.0p-53;
}

double tprun::initNormal(uint64_t seed, double std, uint64_t i) {
  uint64_t base = seed * kGolden;
  double u1 = unit(base + 2 * i), u2 = unit(base + 2 * i + 1);
  return std * std::sqrt(-2.0 * std::log(u1)) *
         std::cos(2.0 * 3.14159265358979323846 * u2);
}

double tprun::initUniform(uint64_t seed, double scale, uint64_t i) {
  uint64_t base = seed * kGolden;
  return scale * (2.0 * unit(base + 2 * i) - 1.0);
}

uint64_t tprun::initInteger(uint64_t seed, uint64_t high, uint64_t i) {
  return splitmix64(seed * kGolden + i) % high;
}

uint16_t tprun::doubleToHalf(double value) {
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  double magnitude = std::fabs(value);
  if (std::isnan(value))
    return uint16_t(sign | 0x7e00);
  // 65520 is halfway between 65504 (the largest f16, odd mantissa) and
  // 2^16: from there on everything rounds to infinity.
  if (magnitude >= 65520.0)
    return uint16_t(sign | 0x7c00);
  if (magnitude < 0x1.0p-14) {
    // Subnormal (or zero): units of 2^-24; 1024 units is the smallest
    // normal, whose encoding is the same integer.
    double units = std::nearbyint(magnitude * 0x1.0p24);
    return uint16_t(sign | uint16_t(units));
  }
  int exponent;
  std::frexp(magnitude, &exponent); // magnitude = m * 2^exponent, m in [.5, 1)
  int e = exponent - 1;             // magnitude in [2^e, 2^(e+1))
  // 11 significant bits: an integer in [1024, 2048] after rounding (exact
  // scaling by a power of two, then one rounding to nearest-even).
  double significand = std::nearbyint(std::ldexp(magnitude, 10 - e));
  if (significand >= 2048.0) {
    significand = 1024.0;
    ++e;
  }
  if (e > 15)
    return uint16_t(sign | 0x7c00);
  return uint16_t(sign | uint16_t((e + 15) << 10) |
                  uint16_t(uint32_t(significand) - 1024));
}

static uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

float tprun::halfToFloat(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  float magnitude;
  if (exponent == 0x1f)
    magnitude = mantissa ? NAN : INFINITY;
  else if (exponent == 0)
    magnitude = std::ldexp(float(mantissa), -24);
  else
    magnitude = std::ldexp(float(1024 + mantissa), exponent - 25);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

uint16_t tprun::floatToBFloat16(float value) {
  uint32_t bits = bitsOf(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40); // NaN stays a quiet NaN
  uint32_t lowestKept = (bits >> 16) & 1;
  bits += 0x7fff + lowestKept;
  return uint16_t(bits >> 16);
}

uint16_t tprun::doubleToBFloat16(double value) {
  float rounded = float(value); // to nearest-even
  if (std::isnan(value) || std::isinf(rounded) || double(rounded) == value)
    return floatToBFloat16(rounded);
  // Round to odd on the way to f32 (truncate towards zero, then set the
  // lowest bit): with 16 more bits than bf16 the second rounding is then
  // the correct one.
  if (std::fabs(double(rounded)) > std::fabs(value))
    rounded = std::nextafter(rounded, 0.0f);
  return floatToBFloat16(floatOf(bitsOf(rounded) | 1u));
}

float tprun::bfloat16ToFloat(uint16_t bits) {
  return floatOf(uint32_t(bits) << 16);
}

template <typename T> static void put(void *data, int64_t index, T value) {
  std::memcpy(static_cast<char *>(data) + index * int64_t(sizeof(T)), &value,
              sizeof(T));
}

template <typename T> static T get(const void *data, int64_t index) {
  T value;
  std::memcpy(&value,
              static_cast<const char *>(data) + index * int64_t(sizeof(T)),
              sizeof(T));
  return value;
}

/// Truncates towards zero; NaN gives 0, out-of-range values saturate.
static int64_t toInteger(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 9223372036854775807.0)
    return INT64_MAX;
  if (value <= -9223372036854775808.0)
    return INT64_MIN;
  return int64_t(value);
}

void tprun::storeDouble(DType dtype, void *data, int64_t index,
                        double value) {
  switch (dtype) {
  case DType::F32:
    put<float>(data, index, float(value));
    return;
  case DType::F64:
    put<double>(data, index, value);
    return;
  case DType::F16:
    put<uint16_t>(data, index, doubleToHalf(value));
    return;
  case DType::BF16:
    put<uint16_t>(data, index, floatToBFloat16(float(value)));
    return;
  default:
    storeInteger(dtype, data, index, toInteger(value));
    return;
  }
}

void tprun::storeInteger(DType dtype, void *data, int64_t index,
                         int64_t value) {
  switch (dtype) {
  case DType::I64:
    put<int64_t>(data, index, value);
    return;
  case DType::I32:
    put<int32_t>(data, index, int32_t(uint32_t(uint64_t(value))));
    return;
  case DType::I8:
    put<int8_t>(data, index, int8_t(uint8_t(uint64_t(value))));
    return;
  case DType::I1:
    put<uint8_t>(data, index, value != 0 ? 1 : 0);
    return;
  default:
    storeDouble(dtype, data, index, double(value));
    return;
  }
}

double tprun::loadDouble(DType dtype, const void *data, int64_t index) {
  switch (dtype) {
  case DType::F32:
    return get<float>(data, index);
  case DType::F64:
    return get<double>(data, index);
  case DType::F16:
    return halfToFloat(get<uint16_t>(data, index));
  case DType::BF16:
    return bfloat16ToFloat(get<uint16_t>(data, index));
  case DType::I64:
    return double(get<int64_t>(data, index));
  case DType::I32:
    return get<int32_t>(data, index);
  case DType::I8:
    return get<int8_t>(data, index);
  case DType::I1:
    return get<uint8_t>(data, index) ? 1.0 : 0.0;
  }
  return 0.0;
}

namespace {

/// Where a local block lies in the tensor its values come from (the stored
/// tensor: the buffer's `source`, else its global value): that tensor's
/// shape, the position of the block's first element in it, and the
/// exclusive bound of the buffer's own elements in it (a position at or
/// past `bound` in some dimension is padding).
struct Placement {
  std::vector<int64_t> stored, offsets, bound;
};

Placement place(const Buffer &buffer, const std::vector<int64_t> &offsets) {
  size_t rank = buffer.globalShape.size();
  Placement p;
  p.stored = buffer.hasSource ? buffer.sourceShape : buffer.globalShape;
  p.offsets = offsets;
  p.bound = buffer.globalShape;
  if (buffer.hasSource)
    for (size_t d = 0; d < rank; ++d) {
      p.offsets[d] += buffer.sourceOffsets[d];
      p.bound[d] += buffer.sourceOffsets[d];
    }
  return p;
}

/// The valid columns of every row of a block of `inner` columns:
/// [first, bound) clipped to the block.
int64_t validColumns(const Placement &p, int64_t inner) {
  size_t last = p.stored.size() - 1;
  return std::max<int64_t>(
      0, std::min<int64_t>(inner, p.bound[last] - p.offsets[last]));
}

/// Walks the rows (all dimensions but the last) of a local block at
/// `p.offsets` of the stored tensor (shape `p.stored`): `row(r, valid,
/// base)` gets the row's number, whether it lies inside `p.bound` (else it
/// is padding), and the stored tensor's row-major offset of its column 0.
template <typename RowFn>
void forEachLocalRow(const std::vector<int64_t> &local, const Placement &p,
                     int64_t rows, RowFn &&row) {
  size_t rank = local.size();
  std::vector<int64_t> index(rank - 1, 0); // odometer over the outer dims
  for (int64_t r = 0; r < rows; ++r) {
    bool valid = true;
    uint64_t base = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      int64_t g = p.offsets[d] + index[d];
      valid &= g < p.bound[d];
      base = base * uint64_t(p.stored[d]) + uint64_t(g);
    }
    row(r, valid, base * uint64_t(p.stored[rank - 1]));
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < local[d])
        break;
      index[d] = 0;
    }
  }
}

/// Walks a rank's block of `buffer` at `offsets` row by row (a scalar is
/// one row of one element): `row(out, first, copied, inner)` gets the
/// block's flat index of the row's column 0, the stored tensor's flat
/// index of its first valid element, how many of its `inner` elements are
/// inside the stored tensor (the rest is padding).
template <typename RowFn>
void forEachBlockRow(const Buffer &buffer, const std::vector<int64_t> &offsets,
                     RowFn &&row) {
  int64_t count = buffer.localElements();
  if (count == 0)
    return;
  size_t rank = buffer.localShape.size();
  if (rank == 0) {
    row(int64_t(0), uint64_t(0), int64_t(1), int64_t(1));
    return;
  }
  const std::vector<int64_t> &local = buffer.localShape;
  Placement p = place(buffer, offsets);
  int64_t inner = local[rank - 1];
  int64_t first = p.offsets[rank - 1], valid = validColumns(p, inner);
  forEachLocalRow(local, p, count / inner,
                  [&](int64_t r, bool rowValid, uint64_t base) {
                    row(r * inner, base + uint64_t(first),
                        rowValid ? valid : int64_t(0), inner);
                  });
}

} // namespace

void tprun::fillLocal(const Buffer &buffer, const std::vector<int64_t> &offsets,
                      void *data) {
  const Init &init = buffer.init;
  DType dtype = buffer.dtype;
  // `stored`: the element's flat index in the stored tensor.
  auto element = [&](int64_t local, bool valid, uint64_t stored) {
    if (!valid) {
      storeInteger(dtype, data, local, 0);
      return;
    }
    switch (init.kind) {
    case Init::Kind::Zeros:
      storeInteger(dtype, data, local, 0);
      return;
    case Init::Kind::Ones:
      storeInteger(dtype, data, local, 1);
      return;
    case Init::Kind::Normal:
      storeDouble(dtype, data, local, initNormal(init.seed, init.std, stored));
      return;
    case Init::Kind::Uniform:
      storeDouble(dtype, data, local,
                  initUniform(init.seed, init.scale, stored));
      return;
    case Init::Kind::Integers: {
      uint64_t v = initInteger(init.seed, init.high, stored);
      if (isFloat(dtype))
        storeDouble(dtype, data, local, double(v));
      else
        storeInteger(dtype, data, local, int64_t(v));
      return;
    }
    }
  };

  forEachBlockRow(buffer, offsets,
                  [&](int64_t out, uint64_t from, int64_t copied,
                      int64_t inner) {
                    for (int64_t j = 0; j < inner; ++j)
                      element(out + j, j < copied,
                              j < copied ? from + uint64_t(j) : 0);
                  });
}

void tprun::copyLocal(const Buffer &buffer, const std::vector<int64_t> &offsets,
                      const void *stored, void *data) {
  size_t size = dtypeSize(buffer.dtype);
  const char *from = static_cast<const char *>(stored);
  char *to = static_cast<char *>(data);
  forEachBlockRow(buffer, offsets,
                  [&](int64_t out, uint64_t first, int64_t copied,
                      int64_t inner) {
                    char *row = to + size_t(out) * size;
                    if (copied)
                      std::memcpy(row, from + first * size,
                                  size_t(copied) * size);
                    if (copied < inner)
                      std::memset(row + size_t(copied) * size, 0,
                                  size_t(inner - copied) * size);
                  });
}

void tprun::copyLocalConverted(const Buffer &buffer,
                               const std::vector<int64_t> &offsets, DType from,
                               const void *stored, void *data) {
  DType to = buffer.dtype;
  auto convert = [&](int64_t local, uint64_t index) {
    double value = loadDouble(from, stored, int64_t(index)); // exact
    if (to == DType::BF16)
      put<uint16_t>(data, local, doubleToBFloat16(value));
    else
      storeDouble(to, data, local, value);
  };
  forEachBlockRow(buffer, offsets,
                  [&](int64_t out, uint64_t first, int64_t copied,
                      int64_t inner) {
                    for (int64_t j = 0; j < inner; ++j) {
                      if (j < copied)
                        convert(out + j, first + uint64_t(j));
                      else
                        storeInteger(to, data, out + j, 0);
                    }
                  });
}

std::vector<int64_t> tprun::storedPosition(const Buffer &buffer,
                                           const std::vector<int64_t> &offsets,
                                           int64_t local) {
  std::vector<int64_t> position(buffer.localShape.size());
  for (size_t d = position.size(); d-- > 0;) {
    position[d] = offsets[d] + local % buffer.localShape[d] +
                  (buffer.hasSource ? buffer.sourceOffsets[d] : 0);
    local /= buffer.localShape[d];
  }
  return position;
}
