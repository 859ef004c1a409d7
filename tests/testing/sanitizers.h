// Which sanitizer a test is built under, for g++ (__SANITIZE_*__) and clang
// (__has_feature) alike: tests that replace malloc step aside under one, and
// tests with time or size bounds scale them.

#ifndef MXLIMIT_TESTS_TESTING_SANITIZERS_H_
#define MXLIMIT_TESTS_TESTING_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define MXLIMIT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MXLIMIT_TEST_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define MXLIMIT_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MXLIMIT_TEST_TSAN 1
#endif
#endif

#if defined(MXLIMIT_TEST_ASAN) || defined(MXLIMIT_TEST_TSAN)
#define MXLIMIT_TEST_SANITIZED 1
#endif

#endif  // MXLIMIT_TESTS_TESTING_SANITIZERS_H_
