//===- tprt-emu-run.cpp - Run one kernel of a PTX file on the emulator -----===//
//
//   tprt-emu-run FILE.ptx KERNEL [--grid X[,Y[,Z]]] [--block X[,Y[,Z]]]
//                [--shared BYTES] ARG...
//
// Loads FILE through the driver API (the emulated libcuda.so.1 this tool is
// linked against), allocates the buffers the arguments describe, launches
// KERNEL once with them and prints every buffer afterwards. It is how the
// emulator's own tests run kernels (test/emu/): hand-written PTX, or CUDA C
// compiled to PTX by clang. Arguments, in the kernel's parameter order:
//
//   TYPE[N]              a device buffer of N elements, zero-filled
//   TYPE[N]=INIT         ... filled: `iota` (0, 1, 2, ...), `fill:V`, or a
//                        comma-separated list of N values
//   TYPE:V               a scalar parameter
//   @K                   the pointer of buffer K again (K counts buffers)
//   @K+E                 ... E elements past its start
//   free@K               buffer K's pointer after freeing it (use after free)
//
// TYPE is f32, f64, i8, i16, i32, i64, f16 or bf16 (16-bit values are given
// and printed as floats). Exit status: 0, or 1 with the driver's message
// when a call fails, 2 for a bad command line.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage(const std::string &message) {
  std::fprintf(stderr,
               "tprt-emu-run: error: %s\nusage: tprt-emu-run FILE.ptx KERNEL "
               "[--grid X,Y,Z] [--block X,Y,Z] [--shared BYTES] ARG...\n",
               message.c_str());
  std::exit(2);
}

void check(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = "?", *text = "?";
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  std::fprintf(stderr, "tprt-emu-run: %s failed: %s: %s\n", call, name, text);
  std::exit(1);
}

struct Type {
  std::string name;
  size_t bytes;
};

bool typeOf(const std::string &s, Type &t) {
  static const Type kTypes[] = {{"f32", 4}, {"f64", 8}, {"i8", 1},  {"i16", 2},
                                {"i32", 4}, {"i64", 8}, {"f16", 2}, {"bf16", 2}};
  for (const Type &k : kTypes)
    if (s == k.name) {
      t = k;
      return true;
    }
  return false;
}

uint16_t toHalf(float f) {
  // Round to nearest even (values in tests are small and exact).
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int exp = int((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (f == 0)
    return uint16_t(sign);
  if (exp <= 0 || exp >= 31)
    return uint16_t(sign | (exp >= 31 ? 0x7c00 : 0));
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(h);
}

float fromHalf(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v = exp == 0 ? std::ldexp(float(mant), -24)
            : exp == 31 ? (mant ? NAN : INFINITY)
                        : std::ldexp(float(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

void store(const Type &t, double v, uint8_t *p) {
  if (t.name == "f32") { float f = float(v); std::memcpy(p, &f, 4); }
  else if (t.name == "f64") std::memcpy(p, &v, 8);
  else if (t.name == "i8") { int8_t i = int8_t(v); std::memcpy(p, &i, 1); }
  else if (t.name == "i16") { int16_t i = int16_t(v); std::memcpy(p, &i, 2); }
  else if (t.name == "i32") { int32_t i = int32_t(v); std::memcpy(p, &i, 4); }
  else if (t.name == "i64") { int64_t i = int64_t(v); std::memcpy(p, &i, 8); }
  else if (t.name == "f16") { uint16_t h = toHalf(float(v)); std::memcpy(p, &h, 2); }
  else {
    float f = float(v);
    uint32_t x;
    std::memcpy(&x, &f, 4);
    x += 0x7fff + ((x >> 16) & 1);
    uint16_t b = uint16_t(x >> 16);
    std::memcpy(p, &b, 2);
  }
}

std::string show(const Type &t, const uint8_t *p) {
  char text[64];
  if (t.name == "f32") { float f; std::memcpy(&f, p, 4); std::snprintf(text, sizeof(text), "%.9g", double(f)); }
  else if (t.name == "f64") { double d; std::memcpy(&d, p, 8); std::snprintf(text, sizeof(text), "%.17g", d); }
  else if (t.name == "i8") { int8_t i; std::memcpy(&i, p, 1); std::snprintf(text, sizeof(text), "%d", i); }
  else if (t.name == "i16") { int16_t i; std::memcpy(&i, p, 2); std::snprintf(text, sizeof(text), "%d", i); }
  else if (t.name == "i32") { int32_t i; std::memcpy(&i, p, 4); std::snprintf(text, sizeof(text), "%d", i); }
  else if (t.name == "i64") { int64_t i; std::memcpy(&i, p, 8); std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(i)); }
  else if (t.name == "f16") { uint16_t h; std::memcpy(&h, p, 2); std::snprintf(text, sizeof(text), "%.6g", double(fromHalf(h))); }
  else {
    uint16_t b;
    std::memcpy(&b, p, 2);
    uint32_t x = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    std::snprintf(text, sizeof(text), "%.6g", double(f));
  }
  return text;
}

void dims(const std::string &text, unsigned out[3]) {
  out[0] = out[1] = out[2] = 1;
  std::stringstream in(text);
  std::string part;
  for (int i = 0; i < 3 && std::getline(in, part, ','); ++i) {
    char *end = nullptr;
    unsigned long v = std::strtoul(part.c_str(), &end, 10);
    if (*end || part.empty())
      usage("bad dimensions \"" + text + "\"");
    out[i] = unsigned(v);
  }
}

struct Buffer {
  Type type;
  size_t count;
  CUdeviceptr ptr;
};

} // namespace

int main(int argc, char **argv) {
  if (argc < 3)
    usage("expected a PTX file and a kernel name");
  std::ifstream file(argv[1], std::ios::binary);
  if (!file)
    usage(std::string("cannot read ") + argv[1]);
  std::stringstream text;
  text << file.rdbuf();
  std::string ptx = text.str();
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared = 0;
  std::vector<std::string> args;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--grid" || a == "--block" || a == "--shared") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--grid")
        dims(v, grid);
      else if (a == "--block")
        dims(v, block);
      else
        shared = unsigned(std::strtoul(v.c_str(), nullptr, 10));
    } else {
      args.push_back(a);
    }
  }

  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUmodule module;
  check(cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData");
  CUfunction function;
  check(cuModuleGetFunction(&function, module, argv[2]), "cuModuleGetFunction");

  std::vector<Buffer> buffers;
  std::vector<std::vector<uint8_t>> values; // each parameter's bytes
  for (const std::string &a : args) {
    if (a[0] == '@' || a.rfind("free@", 0) == 0) {
      bool freed = a[0] == 'f';
      std::string rest = a.substr(freed ? 5 : 1);
      size_t plus = rest.find('+');
      size_t k = std::strtoul(rest.substr(0, plus).c_str(), nullptr, 10);
      long long elements =
          plus == std::string::npos ? 0 : std::strtoll(rest.c_str() + plus + 1, nullptr, 10);
      if (k >= buffers.size())
        usage("\"" + a + "\" names buffer " + std::to_string(k) +
              " of " + std::to_string(buffers.size()));
      CUdeviceptr p = buffers[k].ptr + CUdeviceptr(elements * (long long)buffers[k].type.bytes);
      if (freed)
        check(cuMemFree(buffers[k].ptr), "cuMemFree");
      std::vector<uint8_t> bytes(8);
      std::memcpy(bytes.data(), &p, 8);
      values.push_back(bytes);
      continue;
    }
    size_t bracket = a.find('['), colon = a.find(':');
    if (bracket != std::string::npos) {
      Type t;
      if (!typeOf(a.substr(0, bracket), t))
        usage("unknown type in \"" + a + "\"");
      size_t close = a.find(']');
      size_t count = std::strtoull(a.substr(bracket + 1, close - bracket - 1).c_str(), nullptr, 10);
      std::vector<uint8_t> host(count * t.bytes, 0);
      if (close + 1 < a.size() && a[close + 1] == '=') {
        std::string init = a.substr(close + 2);
        if (init == "iota") {
          for (size_t i = 0; i < count; ++i)
            store(t, double(i), host.data() + i * t.bytes);
        } else if (init.rfind("fill:", 0) == 0) {
          double v = std::strtod(init.c_str() + 5, nullptr);
          for (size_t i = 0; i < count; ++i)
            store(t, v, host.data() + i * t.bytes);
        } else {
          std::stringstream in(init);
          std::string item;
          size_t i = 0;
          while (std::getline(in, item, ',')) {
            if (i >= count)
              usage("too many values in \"" + a + "\"");
            store(t, std::strtod(item.c_str(), nullptr), host.data() + i++ * t.bytes);
          }
        }
      }
      Buffer b{t, count, 0};
      check(cuMemAlloc(&b.ptr, count * t.bytes), "cuMemAlloc");
      if (!host.empty())
        check(cuMemcpyHtoDAsync(b.ptr, host.data(), host.size(), nullptr),
              "cuMemcpyHtoDAsync");
      buffers.push_back(b);
      std::vector<uint8_t> bytes(8);
      std::memcpy(bytes.data(), &b.ptr, 8);
      values.push_back(bytes);
    } else if (colon != std::string::npos) {
      Type t;
      if (!typeOf(a.substr(0, colon), t))
        usage("unknown type in \"" + a + "\"");
      std::vector<uint8_t> bytes(t.bytes);
      store(t, std::strtod(a.c_str() + colon + 1, nullptr), bytes.data());
      values.push_back(bytes);
    } else {
      usage("cannot read the argument \"" + a + "\"");
    }
  }
  std::vector<void *> params;
  for (auto &v : values)
    params.push_back(v.data());
  check(cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1],
                       block[2], shared, nullptr, params.data(), nullptr),
        "cuLaunchKernel");
  check(cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  for (size_t k = 0; k < buffers.size(); ++k) {
    const Buffer &b = buffers[k];
    std::vector<uint8_t> host(b.count * b.type.bytes);
    if (!host.empty())
      check(cuMemcpyDtoHAsync(host.data(), b.ptr, host.size(), nullptr),
            "cuMemcpyDtoHAsync");
    std::printf("buffer %zu:", k);
    for (size_t i = 0; i < b.count; ++i)
      std::printf(" %s", show(b.type, host.data() + i * b.type.bytes).c_str());
    std::printf("\n");
  }
  return 0;
}
