// Status and StatusOr<T>: how every blocktune module reports failure.
//
// No exception crosses a module boundary; functions that can fail return a
// Status (or a StatusOr<T> holding either a value or a non-OK Status). The
// codes mirror gRPC's so the service maps them one to one (server/).
//
// kernels/ uses its own small type rather than absl::Status so that kernel
// tests and benchmarks link against nothing but the C++ standard library.
#ifndef BLOCKTUNE_KERNELS_STATUS_H_
#define BLOCKTUNE_KERNELS_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace blocktune {

enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view ToString(StatusCode code);
// "INVALID_ARGUMENT" -> kInvalidArgument; nullopt for an unknown name.
std::optional<StatusCode> StatusCodeFromString(std::string_view text);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: gemm.m must be in [1, 2147483647], got 0"
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>".
  Status Annotate(std::string_view prefix) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFound(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status AlreadyExists(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}
inline Status FailedPrecondition(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status Unimplemented(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status Internal(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}
inline Status Unavailable(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status OutOfRange(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
inline Status DataLoss(std::string m) {
  return Status(StatusCode::kDataLoss, std::move(m));
}
inline Status Unauthenticated(std::string m) {
  return Status(StatusCode::kUnauthenticated, std::move(m));
}
inline Status Cancelled(std::string m) {
  return Status(StatusCode::kCancelled, std::move(m));
}
inline Status ResourceExhausted(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status DeadlineExceeded(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}

// Holds a T or a non-OK Status. Accessing value() of a non-OK StatusOr is a
// programming error (checked by assert in debug builds).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit
    if (status_.ok()) status_ = Internal("StatusOr built from an OK Status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace blocktune

#define BT_STATUS_CONCAT_INNER_(a, b) a##b
#define BT_STATUS_CONCAT_(a, b) BT_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` yields a non-OK Status.
#define BT_RETURN_IF_ERROR(expr)                            \
  do {                                                      \
    ::blocktune::Status bt_status_ = (expr);                \
    if (!bt_status_.ok()) return bt_status_;                \
  } while (0)

// `lhs = value of expr`, or return its Status from the enclosing function.
#define BT_ASSIGN_OR_RETURN(lhs, expr) \
  BT_ASSIGN_OR_RETURN_IMPL_(BT_STATUS_CONCAT_(bt_statusor_, __LINE__), lhs, expr)
#define BT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // BLOCKTUNE_KERNELS_STATUS_H_
