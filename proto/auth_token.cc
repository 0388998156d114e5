#include "proto/auth_token.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace blocktune {

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  // Said as what it is: a missing file, a folder, an empty file (the
  // daemon said "token must have at least 16 characters, got 0" for each,
  // and a client sent no token at all for an empty one).
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return FailedPrecondition("cannot read token file " + path + ": " +
                              std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return FailedPrecondition("token file " + path + " is not a file");
  }
  std::ifstream in(path);
  if (!in) return FailedPrecondition("cannot read token file " + path);
  std::string line;
  std::getline(in, line);
  const char* space = " \t\r\n";
  size_t begin = line.find_first_not_of(space);
  if (begin == std::string::npos) {
    return FailedPrecondition("token file " + path +
                              " is empty: its first line is the token");
  }
  size_t end = line.find_last_not_of(space);
  return line.substr(begin, end - begin + 1);
}

}  // namespace blocktune
