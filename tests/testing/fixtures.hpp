// The files of tests/fixtures/ (CODEACT_TEST_FIXTURES): Python programs and data the tests keep
// as files rather than C++ string literals.
//   programs/<test file>/<test>.py  a test's multi-line program (Program)
//   limits/                         a misbehaving program per limit (Fixture)
//   boundary/, metadata/, process/  the attacks and reports of those suites (FixtureFile)
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace codeact::testing {

// The whole file at `path`; "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tests/fixtures/<relative>, whole; "" when missing.
inline std::string FixtureFile(const std::string& relative) {
  return ReadFile(std::string(CODEACT_TEST_FIXTURES) + "/" + relative);
}

// A limit fixture: tests/fixtures/limits/<name>.
inline std::string Fixture(const std::string& name) { return FixtureFile("limits/" + name); }

// A test's Python program, tests/fixtures/programs/<name>.py, exactly as the code a run gets.
// A missing or empty file fails the test that asked for it.
inline std::string Program(const std::string& name) {
  const std::string path = std::string(CODEACT_TEST_FIXTURES) + "/programs/" + name + ".py";
  std::string text = ReadFile(path);
  if (text.empty()) ADD_FAILURE() << "no test program at " << path;
  return text;
}

}  // namespace codeact::testing
