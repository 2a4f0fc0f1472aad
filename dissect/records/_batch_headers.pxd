# Declarations of the compiled batch header reader (_batch_headers.pyx), so the compiled row builders (_rows.pyx)
# read a record batch's header into C values, as split_batches does, without a Batch per batch.

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t

cdef enum Next:
    END  # no bytes left
    PARTIAL  # the bytes left hold no whole batch (a Fetch response may end so)
    BAD  # a magic byte or batch length no batch can have: split_batches says which
    LEGACY  # a magic 0/1 message of `size` bytes
    BATCH  # a magic 2 batch of `size` bytes, its header read

cdef struct Header:
    Py_ssize_t size  # bytes on the wire, the 12-byte offset/length prefix included
    int64_t length  # the batch_length field
    int magic
    int64_t base_offset
    int32_t last_offset_delta
    int32_t partition_leader_epoch
    uint32_t crc
    int16_t attributes
    int32_t record_count
    int64_t first_timestamp, max_timestamp, producer_id
    int16_t producer_epoch
    int32_t base_sequence

cdef Next next_batch(const uint8_t* b, Py_ssize_t left, Header* h) noexcept
cdef bint crc_ok(bytes data, const uint8_t* b, Py_ssize_t pos, Header* h) except -1
