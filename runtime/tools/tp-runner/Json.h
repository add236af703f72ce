//===- Json.h - A minimal JSON reader for tp-runner -------------*- C++ -*-===//
//
// Just enough JSON (RFC 8259) to read model.json: objects keep their member
// order, numbers keep their literal text so that 64-bit integers (seeds)
// are read exactly, strings are UTF-8 with \uXXXX escapes decoded. No
// writer. Nesting is limited to 256 levels.
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_JSON_H
#define TP_RUNNER_JSON_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tprun {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind = Kind::Null;
  bool boolean = false;
  /// The decoded string, or the literal text of a number.
  std::string text;
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  bool isNull() const { return kind == Kind::Null; }
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }

  /// The member `key` of an object; null if absent or not an object.
  const JsonValue *get(const std::string &key) const;

  /// A number literal without fraction or exponent that fits in int64_t.
  bool asInt64(int64_t &out) const;
  /// A non-negative number literal without fraction or exponent that fits in
  /// uint64_t.
  bool asUInt64(uint64_t &out) const;
  /// Any number.
  bool asDouble(double &out) const;

  /// "null", "a boolean", "a number", "a string", "an array", "an object".
  const char *kindName() const;
};

/// Parses a whole document. On failure returns false and sets `error` to
/// "line L, column C: ..." (1-based).
bool parseJson(const std::string &text, JsonValue &out, std::string &error);

/// Reads the whole regular file `path` into `text`. A FIFO, device or
/// folder is refused without blocking (every rank reads the same path, and
/// a FIFO would hold them all in open()). On failure returns false and sets
/// `error` to the reason ("No such file or directory", "it is a FIFO, not a
/// regular file").
bool readRegularFile(const std::string &path, std::string &text,
                     std::string &error);

/// Opens `path` read-only without blocking (O_NONBLOCK: a FIFO opens at once)
/// and checks that it is a regular file; returns the descriptor (its size in
/// `size`), or -1 with `error` set as readRegularFile does.
int openRegularFile(const std::string &path, uint64_t &size,
                    std::string &error);

} // namespace tprun

#endif // TP_RUNNER_JSON_H
