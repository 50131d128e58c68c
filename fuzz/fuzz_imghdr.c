/* libFuzzer target: rv_imghdr_read (formats/imghdr.c), the header readers behind the
 * decoded-pixel limit, on arbitrary bytes. Contract: the result is one of the three values;
 * OK names a format and gives non-negative sides; BAD names a format and a reason; UNKNOWN
 * names none. Reads outside the buffer are what ASan reports (the buffer libFuzzer passes
 * is exactly `size` bytes). */
#include "formats/imghdr.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rv_imghdr h;
  rv_imghdr_result r = rv_imghdr_read(&h, data, size);
  switch (r) {
  case RV_IMGHDR_OK:
    if (!h.format || h.width < 0 || h.height < 0 || h.channels < 0) abort();
    break;
  case RV_IMGHDR_BAD:
    if (!h.format || !h.error || !h.error[0]) abort();
    break;
  case RV_IMGHDR_UNKNOWN:
    if (h.format) abort();
    break;
  default:
    abort();
  }
  return 0;
}
