#include "proto/auth_token.h"

#include <fstream>

namespace blocktune {

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return FailedPrecondition("cannot read token file " + path);
  std::string line;
  std::getline(in, line);
  const char* space = " \t\r\n";
  size_t begin = line.find_first_not_of(space);
  if (begin == std::string::npos) return std::string();
  size_t end = line.find_last_not_of(space);
  return line.substr(begin, end - begin + 1);
}

}  // namespace blocktune
