#include "src/replay/line_reader.h"

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mxlimit::replay {
namespace {

// A temporary file holding `content`, rewound; closed on destruction.
class TempFile {
 public:
  explicit TempFile(const std::string& content) : file_(std::tmpfile()) {
    EXPECT_NE(file_, nullptr);
    std::fwrite(content.data(), 1, content.size(), file_);
    std::rewind(file_);
  }
  ~TempFile() { std::fclose(file_); }
  std::FILE* get() { return file_; }

 private:
  std::FILE* file_;
};

struct Got {
  std::string text;
  uint64_t number;
  uint64_t length;
  bool too_long;
  std::string head;
};

std::vector<Got> ReadAll(const std::string& content, size_t max_line,
                         size_t chunk) {
  TempFile f(content);
  LineReader reader(f.get(), max_line, chunk);
  std::vector<Got> out;
  Line line;
  while (reader.Next(&line)) {
    out.push_back(Got{std::string(line.text), line.number, line.length,
                      line.too_long, std::string(line.head)});
  }
  EXPECT_TRUE(reader.status().ok()) << reader.status();
  EXPECT_EQ(reader.bytes_read(), content.size());
  return out;
}

std::vector<std::string> Texts(const std::vector<Got>& got) {
  std::vector<std::string> out;
  for (const Got& g : got) out.push_back(g.too_long ? "<long>" : g.text);
  return out;
}

using Lines = std::vector<std::string>;

TEST(LineReaderTest, SplitsOnNewlinesAndKeepsEmptyLines) {
  EXPECT_EQ(Texts(ReadAll("a\nbb\n\nccc\n", 64, 4096)),
            (Lines{"a", "bb", "", "ccc"}));
  EXPECT_EQ(Texts(ReadAll("", 64, 4096)), Lines{});
  EXPECT_EQ(Texts(ReadAll("\n", 64, 4096)), Lines{""});
}

TEST(LineReaderTest, LastLineWithoutNewlineIsALine) {
  EXPECT_EQ(Texts(ReadAll("a\nlast", 64, 4096)), (Lines{"a", "last"}));
}

TEST(LineReaderTest, DropsCarriageReturnBeforeNewline) {
  EXPECT_EQ(Texts(ReadAll("a\r\nb\r\n\r\nc\rd\r", 64, 4096)),
            (Lines{"a", "b", "", "c\rd"}));
}

TEST(LineReaderTest, NumbersLinesFromOne) {
  std::vector<Got> got = ReadAll("x\ny\nz", 64, 4096);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].number, 1u);
  EXPECT_EQ(got[2].number, 3u);
}

TEST(LineReaderTest, LongLinesAreSkippedAndReportedOnce) {
  std::string big(1000, 'x');
  big[0] = 'H';
  std::vector<Got> got =
      ReadAll("ok1\n" + big + "\nok2\n" + big + "\r\n" + big, 100, 7);
  ASSERT_EQ(Texts(got), (Lines{"ok1", "<long>", "ok2", "<long>", "<long>"}));
  for (int i : {1, 3, 4}) {
    EXPECT_EQ(got[i].length, 1000u) << i;
    EXPECT_TRUE(got[i].text.empty());
    EXPECT_EQ(got[i].head.substr(0, 3), "Hxx");
    EXPECT_LE(got[i].head.size(), LineReader::kHeadBytes);
  }
  EXPECT_EQ(got[4].number, 5u);
}

TEST(LineReaderTest, LineOfExactlyTheCapFitsWithCrlf) {
  std::string cap(100, 'y');
  std::vector<Got> got = ReadAll(cap + "\r\n" + cap + "z\r\n" + cap, 100, 1);
  ASSERT_EQ(Texts(got), (Lines{cap, "<long>", cap}));
  EXPECT_EQ(got[1].length, 101u);
}

TEST(LineReaderTest, AgreesWithASimpleSplitOverManyChunkSizes) {
  // Lines of every length around the cap and the chunk boundaries.
  std::string content;
  std::vector<std::string> expected;
  uint32_t x = 7;
  for (int i = 0; i < 400; ++i) {
    x = x * 1664525 + 1013904223;
    size_t len = (x >> 8) % 90;
    std::string line(len, static_cast<char>('a' + i % 26));
    bool crlf = (x >> 20) & 1;
    content += line + (crlf ? "\r\n" : "\n");
    expected.push_back(len > 64 ? "<long>" : line);
  }
  for (size_t chunk : {1, 2, 3, 17, 64, 65, 100, 4096}) {
    EXPECT_EQ(Texts(ReadAll(content, 64, chunk)), expected) << chunk;
  }
}

TEST(LineReaderTest, HugeLineUsesNoMoreMemoryThanTheBuffer) {
  // 8 MiB without a newline through a 1 KiB cap: one too-long line whose
  // length is exact; the reader only ever holds cap + chunk bytes.
  std::string huge(8 << 20, 'q');
  std::vector<Got> got = ReadAll(huge + "\nend\n", 1024, 4096);
  ASSERT_EQ(Texts(got), (Lines{"<long>", "end"}));
  EXPECT_EQ(got[0].length, huge.size());
}

}  // namespace
}  // namespace mxlimit::replay
