//===- Checkpoint.cpp - Global tensors from .safetensors files ------------===//

#include "Checkpoint.h"

#include "Json.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

using namespace tprun;

namespace {

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

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isDirectory(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool isFile(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && !S_ISDIR(info.st_mode);
}

/// The folder of `path` ("." for a bare name).
std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

std::string tprun::shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping)
    munmap(mapping, mappingSize);
}

bool SafetensorsFile::open(const std::string &path, const std::string &role,
                           std::string &error) {
  filePath = path;
  const std::string named = role + " " + path;
  uint64_t fileSize = 0;
  std::string why;
  int fd = openRegularFile(path, fileSize, why);
  if (fd < 0) {
    error = "cannot read " + named + ": " + why;
    return false;
  }
  size_t size = size_t(fileSize);
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
  data = static_cast<const char *>(mapping) + 8 + headerSize;
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

const CheckpointTensor *SafetensorsFile::find(const std::string &name) const {
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : &entries[it->second];
}

bool Checkpoint::open(const std::string &path, const std::string &role,
                      std::string &error) {
  givenPath = path;
  std::string target = path;
  if (isDirectory(path)) {
    // A Hugging Face model folder: its index, else its one file.
    const std::string named = role + " folder " + path;
    for (const char *name :
         {"model.safetensors.index.json", "model.safetensors"})
      if (target == path && isFile(path + "/" + name))
        target = path + "/" + name;
    if (target == path) {
      DIR *folder = opendir(path.c_str());
      if (!folder) {
        error = "cannot read " + named + ": " + std::strerror(errno);
        return false;
      }
      std::vector<std::string> indexes, singles;
      while (dirent *entry = readdir(folder)) {
        std::string name = entry->d_name;
        if (!isFile(path + "/" + name))
          continue;
        if (endsWith(name, ".safetensors.index.json"))
          indexes.push_back(name);
        else if (endsWith(name, ".safetensors"))
          singles.push_back(name);
      }
      closedir(folder);
      std::sort(indexes.begin(), indexes.end());
      std::sort(singles.begin(), singles.end());
      if (indexes.size() > 1) {
        error = named + " holds " + std::to_string(indexes.size()) +
                " indexes (" + indexes[0] + ", " + indexes[1] +
                (indexes.size() > 2 ? ", ..." : "") +
                ") and no model.safetensors.index.json: name the one to read";
        return false;
      }
      if (indexes.size() == 1)
        target = path + "/" + indexes[0];
      else if (singles.size() == 1)
        target = path + "/" + singles[0];
      else if (singles.empty()) {
        error = named + " holds no .safetensors file (looked for "
                        "model.safetensors.index.json and model.safetensors)";
        return false;
      } else {
        error = named + " holds " + std::to_string(singles.size()) +
                " .safetensors files (" + singles[0] + ", " + singles[1] +
                (singles.size() > 2 ? ", ..." : "") +
                ") but no model.safetensors.index.json saying which tensor "
                "is where";
        return false;
      }
    }
  }
  if (endsWith(target, ".json"))
    return openIndex(target, role, error);
  auto file = std::make_unique<SafetensorsFile>();
  if (!file->open(target, role, error))
    return false;
  entries = file->tensors();
  for (size_t i = 0; i < entries.size(); ++i)
    byName[entries[i].name] = i;
  files.push_back(std::move(file));
  return true;
}

bool Checkpoint::openIndex(const std::string &index, const std::string &role,
                           std::string &error) {
  const std::string named = role + " index " + index;
  std::string text, why;
  if (!readRegularFile(index, text, why)) {
    error = "cannot read " + named + ": " + why;
    return false;
  }
  JsonValue root;
  std::string parseError;
  if (!parseJson(text, root, parseError)) {
    error = named + ": invalid JSON: " + parseError;
    return false;
  }
  const JsonValue *map = root.get("weight_map");
  if (!map) {
    error = named + " has no \"weight_map\" object (a Hugging Face index "
                    "maps each tensor to its shard file)";
    return false;
  }
  if (!map->isObject()) {
    error = named + ": \"weight_map\" is " + map->kindName() +
            ", expected an object";
    return false;
  }
  if (map->members.empty()) {
    error = named + ": \"weight_map\" is empty: the index names no tensor "
                    "(every weight would come from its init)";
    return false;
  }
  std::map<std::string, size_t> shards; // shard path -> files index
  for (const auto &[name, value] : map->members) {
    std::string where = named + ": \"weight_map\" entry \"" + name + "\"";
    if (!value.isString() || value.text.empty()) {
      error = where + " is " +
              (value.isString() ? std::string("an empty string")
                                : value.kindName()) +
              ", expected a shard file name";
      return false;
    }
    // Shards lie next to the index (the JSON reader refuses a name twice).
    std::string shard =
        value.text[0] == '/' ? value.text : folderOf(index) + "/" + value.text;
    auto it = shards.find(shard);
    if (it == shards.end()) {
      auto file = std::make_unique<SafetensorsFile>();
      if (!file->open(shard, role, error)) {
        error += " (a shard of the index " + index + ", for tensor \"" + name +
                 "\")";
        return false;
      }
      it = shards.emplace(shard, files.size()).first;
      files.push_back(std::move(file));
    }
    const CheckpointTensor *tensor = files[it->second]->find(name);
    if (!tensor) {
      error = named + " maps tensor \"" + name + "\" to " + shard +
              ", which has no such tensor";
      return false;
    }
    CheckpointTensor entry = *tensor;
    entry.file = it->second;
    byName[name] = entries.size();
    entries.push_back(std::move(entry));
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

bool tprun::dtypeOfSafetensors(const std::string &dtype, DType &out) {
  for (DType candidate : {DType::F32, DType::F16, DType::BF16, DType::F64,
                          DType::I64, DType::I32, DType::I8, DType::I1})
    if (dtype == safetensorsDType(candidate)) {
      out = candidate;
      return true;
    }
  return false;
}

std::string tprun::checkTensor(const Checkpoint &file,
                               const CheckpointTensor &tensor,
                               const Buffer &buffer, const std::string &role) {
  std::string named =
      role + " tensor \"" + tensor.name + "\" in " + file.fileOf(tensor);
  if (buffer.hasSource && tensor.shape != buffer.sourceShape)
    return named + " has shape " + shapeText(tensor.shape) +
           " but the model expects " + shapeText(buffer.sourceShape) +
           " (the model's " + roleName(buffer.role) + " " +
           std::to_string(buffer.index) + " is the block " +
           shapeText(buffer.globalShape) + " at offsets " +
           shapeText(buffer.sourceOffsets) + " of it)";
  if (!buffer.hasSource && tensor.shape != buffer.globalShape)
    return named + " has shape " + shapeText(tensor.shape) +
           " but the model expects " + shapeText(buffer.globalShape);
  DType stored;
  bool known = dtypeOfSafetensors(tensor.dtype, stored);
  if (known &&
      (stored == buffer.dtype || (isFloat(stored) && isFloat(buffer.dtype))))
    return "";
  return named + " has dtype " + tensor.dtype + " but the model expects " +
         safetensorsDType(buffer.dtype) + " (" + dtypeName(buffer.dtype) +
         (isFloat(buffer.dtype) ? "; F32, F16, BF16 and F64 are converted"
                                : "") +
         ")";
}
