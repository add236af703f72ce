//===- Json.cpp - A minimal JSON reader for tp-runner ---------------------===//

#include "Json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tprun;

const JsonValue *JsonValue::get(const std::string &key) const {
  if (kind != Kind::Object)
    return nullptr;
  for (const auto &member : members)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

static bool isIntegerLiteral(const std::string &text) {
  return text.find_first_of(".eE") == std::string::npos;
}

bool JsonValue::asInt64(int64_t &out) const {
  if (kind != Kind::Number || !isIntegerLiteral(text))
    return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno || !end || *end)
    return false;
  out = value;
  return true;
}

bool JsonValue::asUInt64(uint64_t &out) const {
  if (kind != Kind::Number || !isIntegerLiteral(text) || text[0] == '-')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno || !end || *end)
    return false;
  out = value;
  return true;
}

bool JsonValue::asDouble(double &out) const {
  if (kind != Kind::Number)
    return false;
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end && !*end;
}

const char *JsonValue::kindName() const {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "?";
}

namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  bool parseDocument(JsonValue &out) {
    skipSpace();
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the value");
    return true;
  }

  std::string error;

private:
  const std::string &text;
  size_t pos = 0;

  bool fail(const std::string &message) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error = "line " + std::to_string(line) + ", column " +
            std::to_string(column) + ": " +
            (pos >= text.size() ? "unexpected end of input, " : "") + message;
    return false;
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool literal(const char *word) {
    size_t n = 0;
    while (word[n])
      ++n;
    if (text.compare(pos, n, word) != 0)
      return fail("invalid literal");
    pos += n;
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
    if (depth > 256)
      return fail("nesting deeper than 256 levels");
    if (pos >= text.size())
      return fail("expected a value");
    char c = text[pos];
    switch (c) {
    case '{':
      return parseObject(out, depth);
    case '[':
      return parseArray(out, depth);
    case '"':
      out.kind = JsonValue::Kind::String;
      return parseString(out.text);
    case 't':
      out.kind = JsonValue::Kind::Bool;
      out.boolean = true;
      return literal("true");
    case 'f':
      out.kind = JsonValue::Kind::Bool;
      out.boolean = false;
      return literal("false");
    case 'n':
      out.kind = JsonValue::Kind::Null;
      return literal("null");
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      return fail(std::string("unexpected character '") + c + "'");
    }
  }

  bool parseObject(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Object;
    ++pos; // '{'
    skipSpace();
    if (pos < text.size() && text[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      if (pos >= text.size() || text[pos] != '"')
        return fail("expected a member name in double quotes");
      std::string key;
      if (!parseString(key))
        return false;
      for (const auto &member : out.members)
        if (member.first == key)
          return fail("duplicate member \"" + key + "\"");
      skipSpace();
      if (pos >= text.size() || text[pos] != ':')
        return fail("expected ':' after a member name");
      ++pos;
      skipSpace();
      out.members.emplace_back(key, JsonValue());
      if (!parseValue(out.members.back().second, depth + 1))
        return false;
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool parseArray(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Array;
    ++pos; // '['
    skipSpace();
    if (pos < text.size() && text[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      out.items.emplace_back();
      if (!parseValue(out.items.back(), depth + 1))
        return false;
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  bool parseNumber(JsonValue &out) {
    size_t start = pos;
    auto digits = [&]() {
      size_t first = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos > first;
    };
    if (text[pos] == '-')
      ++pos;
    if (pos < text.size() && text[pos] == '0') {
      ++pos;
    } else if (!digits()) {
      return fail("invalid number");
    }
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      if (!digits())
        return fail("invalid number: no digits after '.'");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!digits())
        return fail("invalid number: no digits in the exponent");
    }
    out.kind = JsonValue::Kind::Number;
    out.text = text.substr(start, pos - start);
    return true;
  }

  bool hex4(unsigned &out) {
    if (pos + 4 > text.size())
      return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= unsigned(c - 'A' + 10);
      else
        return fail("invalid \\u escape");
    }
    return true;
  }

  static void appendUtf8(std::string &out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xc0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += char(0xe0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    } else {
      out += char(0xf0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3f));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    }
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    out.clear();
    while (true) {
      if (pos >= text.size())
        return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(text[pos]);
      if (c == '"') {
        ++pos;
        return true;
      }
      if (c < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += char(c);
        ++pos;
        continue;
      }
      ++pos;
      if (pos >= text.size())
        return fail("unterminated string");
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xd800 && cp < 0xdc00) {
          unsigned low;
          if (pos + 2 > text.size() || text[pos] != '\\' ||
              text[pos + 1] != 'u')
            return fail("unpaired surrogate in a \\u escape");
          pos += 2;
          if (!hex4(low))
            return false;
          if (low < 0xdc00 || low >= 0xe000)
            return fail("unpaired surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return fail("unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos;
        return fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }
};

} // namespace

bool tprun::parseJson(const std::string &text, JsonValue &out,
                      std::string &error) {
  Parser parser(text);
  out = JsonValue();
  if (parser.parseDocument(out))
    return true;
  error = parser.error;
  return false;
}

int tprun::openRegularFile(const std::string &path, uint64_t &size,
                           std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return -1;
  }
  struct stat info;
  if (fstat(fd, &info) != 0) {
    error = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(info.st_mode)) {
    error = S_ISDIR(info.st_mode)    ? "it is a directory"
            : S_ISFIFO(info.st_mode) ? "it is a FIFO, not a regular file"
            : S_ISSOCK(info.st_mode) ? "it is a socket, not a regular file"
            : S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode)
                ? "it is a device, not a regular file"
                : "it is not a regular file";
    ::close(fd);
    return -1;
  }
  // Reads of a regular file never block; clear the flag all the same.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  size = uint64_t(info.st_size);
  return fd;
}

bool tprun::readRegularFile(const std::string &path, std::string &text,
                            std::string &error) {
  uint64_t size = 0;
  int fd = openRegularFile(path, size, error);
  if (fd < 0)
    return false;
  text.clear();
  text.reserve(size_t(size));
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0)
      break;
    text.append(chunk, size_t(n));
  }
  ::close(fd);
  return true;
}
