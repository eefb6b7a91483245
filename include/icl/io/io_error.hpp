#pragma once
// The I/O tier of errors: a file could not be read or written (disk full, permissions, damage).
// The message names the file and the system's reason; drivers report it and exit 1.
#include <stdexcept>
#include <string>

namespace icl::io {

class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "what PATH: strerror(errno)" as an IoError.
IoError io_error(const std::string& what, const std::string& path);

}  // namespace icl::io
