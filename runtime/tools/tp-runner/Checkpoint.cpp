//===- Checkpoint.cpp - A .safetensors checkpoint of global tensors -------===//

#include "Checkpoint.h"

#include "Json.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

using namespace tprun;

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Bytes per element of a safetensors dtype; 0 if unknown.
size_t elementBytes(const std::string &dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},      {"I8", 1},      {"F8_E5M2", 1},
      {"F8_E4M3", 1}, {"I16", 2},  {"U16", 2},     {"F16", 2},
      {"BF16", 2}, {"I32", 4},     {"U32", 4},     {"F32", 4},
      {"F64", 8},  {"I64", 8},     {"U64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

} // namespace

Checkpoint::~Checkpoint() {
  if (mapping)
    munmap(mapping, mappingSize);
}

bool Checkpoint::open(const std::string &path, std::string &error) {
  filePath = path;
  const std::string named = "checkpoint " + path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read " + named + ": " + std::strerror(errno);
    return false;
  }
  struct stat info;
  if (fstat(fd, &info) != 0) {
    error = "cannot read " + named + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(info.st_mode)) {
    error = "cannot read " + named + ": " +
            (S_ISDIR(info.st_mode) ? "it is a directory"
                                   : "it is not a regular file");
    ::close(fd);
    return false;
  }
  size_t size = size_t(info.st_size);
  if (size < 8) {
    error = named + " is truncated: " + std::to_string(size) +
            " bytes, less than the 8-byte header length (not a .safetensors "
            "file?)";
    ::close(fd);
    return false;
  }
  mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int mapErrno = errno;
  ::close(fd);
  if (mapping == MAP_FAILED) {
    mapping = nullptr;
    error = "cannot map " + named + ": " + std::strerror(mapErrno);
    return false;
  }
  mappingSize = size;
  const unsigned char *bytes = static_cast<const unsigned char *>(mapping);
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | bytes[i];
  if (headerSize > size - 8) {
    error = named + " is truncated: its header is " +
            std::to_string(headerSize) + " bytes but " +
            std::to_string(size - 8) +
            " follow the header length (not a .safetensors file?)";
    return false;
  }
  dataStart = static_cast<const char *>(mapping) + 8 + headerSize;
  uint64_t dataSize = size - 8 - headerSize;

  JsonValue header;
  std::string parseError;
  if (!parseJson(std::string(static_cast<const char *>(mapping) + 8,
                             size_t(headerSize)),
                 header, parseError)) {
    error = named + ": invalid header: " + parseError;
    return false;
  }
  if (!header.isObject()) {
    error = named + ": the header is " + header.kindName() +
            ", expected an object";
    return false;
  }
  for (const auto &[name, value] : header.members) {
    if (name == "__metadata__")
      continue;
    std::string where = named + ": tensor \"" + name + "\"";
    if (byName.count(name)) {
      error = where + " appears twice";
      return false;
    }
    if (!value.isObject()) {
      error = where + " is " + value.kindName() + ", expected an object";
      return false;
    }
    CheckpointTensor tensor;
    tensor.name = name;
    const JsonValue *dtype = value.get("dtype");
    if (!dtype || !dtype->isString()) {
      error = where + " has no \"dtype\" string";
      return false;
    }
    tensor.dtype = dtype->text;
    const JsonValue *shape = value.get("shape");
    if (!shape || !shape->isArray()) {
      error = where + " has no \"shape\" array";
      return false;
    }
    uint64_t elements = 1;
    for (const JsonValue &dim : shape->items) {
      int64_t extent = -1;
      if (!dim.asInt64(extent) || extent < 0 || extent > (int64_t(1) << 48)) {
        error = where + ": \"shape\" holds \"" + dim.text +
                "\", expected non-negative integers";
        return false;
      }
      tensor.shape.push_back(extent);
      elements = extent == 0 || elements == 0
                     ? 0
                     : (elements > (uint64_t(1) << 62) / uint64_t(extent)
                            ? (uint64_t(1) << 62)
                            : elements * uint64_t(extent));
    }
    const JsonValue *offsets = value.get("data_offsets");
    if (!offsets || !offsets->isArray() || offsets->items.size() != 2 ||
        !offsets->items[0].asUInt64(tensor.begin) ||
        !offsets->items[1].asUInt64(tensor.end) || tensor.begin > tensor.end) {
      error = where + ": \"data_offsets\" must be [begin, end] with begin <= "
                      "end";
      return false;
    }
    size_t bytesPer = elementBytes(tensor.dtype);
    if (bytesPer && tensor.end - tensor.begin != elements * bytesPer) {
      error = where + " has data_offsets [" + std::to_string(tensor.begin) +
              ", " + std::to_string(tensor.end) + "] (" +
              std::to_string(tensor.end - tensor.begin) + " bytes) but shape " +
              shapeText(tensor.shape) + " of " + tensor.dtype + " needs " +
              std::to_string(elements * bytesPer) + " bytes";
      return false;
    }
    if (tensor.end > dataSize) {
      error = named + " is truncated: tensor \"" + name + "\" ends at byte " +
              std::to_string(tensor.end) + " of the data but the file holds " +
              std::to_string(dataSize) + " data bytes";
      return false;
    }
    byName[name] = entries.size();
    entries.push_back(std::move(tensor));
  }
  return true;
}

const CheckpointTensor *Checkpoint::find(const std::string &name) const {
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : &entries[it->second];
}

const char *tprun::safetensorsDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::F64:
    return "F64";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::I8:
    return "I8";
  case DType::I1:
    return "BOOL";
  }
  return "?";
}

std::string tprun::checkTensor(const CheckpointTensor &tensor,
                               const Buffer &buffer) {
  std::string named = "checkpoint tensor \"" + tensor.name + "\"";
  if (tensor.shape != buffer.globalShape)
    return named + " has shape " + shapeText(tensor.shape) +
           " but the model expects " + shapeText(buffer.globalShape);
  if (tensor.dtype != safetensorsDType(buffer.dtype))
    return named + " has dtype " + tensor.dtype + " but the model expects " +
           safetensorsDType(buffer.dtype) + " (" + dtypeName(buffer.dtype) +
           ")";
  return "";
}
