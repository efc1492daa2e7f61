"""parse: complete lines only, absolute offsets, malformed lines recorded and never raised."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from stages.parse import parse, repair
from stages.source import ParseResult, RawRecord, parse_reasons


def values(result: ParseResult) -> list[tuple[int, int, dict[str, object]]]:
    return [(r.line, r.offset, r.value) for r in result.records]


def test_one_record_per_line_with_line_number_and_line_start_offset() -> None:
    data = b'{"a":1}\n{"b":"xy"}\n{"c":[1,2]}\n'
    result = parse(data)
    assert values(result) == [(1, 0, {"a": 1}), (2, 8, {"b": "xy"}), (3, 19, {"c": [1, 2]})]
    assert result.consumed == len(data)
    assert result.next_line == 4
    assert result.malformed_lines == ()


def test_bytes_after_the_last_newline_are_withheld_not_malformed() -> None:
    data = b'{"a":1}\n{"b":'
    result = parse(data)
    assert values(result) == [(1, 0, {"a": 1})]
    assert result.consumed == 8
    assert result.next_line == 2
    assert result.malformed_lines == ()


def test_a_complete_json_tail_without_newline_is_still_withheld() -> None:
    result = parse(b'{"a":1}')
    assert result == ParseResult(records=(), consumed=0, next_line=1, withheld=True)


def test_a_settled_tail_without_newline_is_a_record() -> None:
    """Issue 22 item 2: a file untouched for a while whose last line has no newline."""
    result = parse(b'{"a":1}\n{"b":2}', settled=True)
    assert values(result) == [(1, 0, {"a": 1}), (2, 8, {"b": 2})]
    assert (result.consumed, result.tail_taken, result.unterminated) == (15, True, False)
    assert result.malformed_lines == ()


def test_a_settled_tail_that_is_no_object_is_named_not_malformed() -> None:
    result = parse(b'{"a":1}\n{"b":', settled=True)
    assert values(result) == [(1, 0, {"a": 1})]
    assert (result.tail_taken, result.unterminated, result.malformed_lines) == (False, True, ())
    assert parse_reasons(result) == {"unterminated_line"}
    # unsettled, the same bytes wait: withheld, and no reason of the parse's own
    waiting = parse(b'{"a":1}\n{"b":')
    assert (waiting.withheld, parse_reasons(waiting)) == (True, set())


def test_settled_changes_nothing_for_a_file_ending_in_a_newline() -> None:
    data = b'{"a":1}\n{"b":2}\n'
    assert parse(data, settled=True) == parse(data)
    assert parse(b'{"a":1}\n  \n', settled=True) == parse(b'{"a":1}\n  \n')


def test_empty_input() -> None:
    assert parse(b"", base_offset=7, first_line=4) == ParseResult((), 0, 4)


def test_base_offset_and_first_line_make_offsets_absolute() -> None:
    result = parse(b'{"a":1}\n\n{"b":2}\n', base_offset=100, first_line=10)
    assert values(result) == [(10, 100, {"a": 1}), (12, 109, {"b": 2})]
    assert result.consumed == 17
    assert result.next_line == 13


def test_crlf_line_endings() -> None:
    result = parse(b'{"a":1}\r\n{"b":2}\r\n')
    assert values(result) == [(1, 0, {"a": 1}), (2, 9, {"b": 2})]
    assert result.malformed_lines == ()


def test_blank_and_whitespace_only_lines_are_skipped_silently() -> None:
    result = parse(b'\n   \n\t\r\n\r\n{"a":1}\n\n')
    assert values(result) == [(5, 10, {"a": 1})]
    assert result.malformed_lines == ()
    assert result.next_line == 7


def test_json_values_that_are_not_objects_are_malformed() -> None:
    data = b'null\n3\n[]\n"s"\ntrue\n[{"a":1}]\n{"ok":1}\n'
    result = parse(data)
    assert values(result) == [(7, 29, {"ok": 1})]
    assert result.malformed_lines == (1, 2, 3, 4, 5, 6)


def test_lines_that_are_not_json_are_malformed_and_parsing_goes_on() -> None:
    result = parse(b'{"a":1}\nnot json\n{"broken":\n{"b":2}\n')
    assert [r.value for r in result.records] == [{"a": 1}, {"b": 2}]
    assert result.malformed_lines == (2, 3)


def test_concatenated_objects_share_line_and_offset() -> None:
    data = b'{"z":0}\n{"a":1}{"b":2}  \t{"c":{"d":[3]}}\n'
    result = parse(data)
    assert values(result) == [
        (1, 0, {"z": 0}),
        (2, 8, {"a": 1}),
        (2, 8, {"b": 2}),
        (2, 8, {"c": {"d": [3]}}),
    ]
    assert result.malformed_lines == ()


def test_concatenated_objects_with_a_bad_tail_keep_the_objects_before_it() -> None:
    result = parse(b'{"a":1}{"b":2}garbage\n{"c":3}[1]\n{"d":4} null\n')
    assert values(result) == [
        (1, 0, {"a": 1}),
        (1, 0, {"b": 2}),
        (2, 22, {"c": 3}),
        (3, 33, {"d": 4}),
    ]
    assert result.malformed_lines == (1, 2, 3)


def test_garbage_before_an_object_loses_the_whole_line() -> None:
    result = parse(b'x{"a":1}\n')
    assert result.records == ()
    assert result.malformed_lines == (1,)


def test_invalid_utf8_inside_an_object_is_repaired_to_replacement_characters() -> None:
    result = parse(b'{"a":"\xff\xfe"}\n\xc3\x28\n{"ok":true}\n')
    assert [r.value for r in result.records] == [{"a": "\ufffd\ufffd"}, {"ok": True}]
    assert result.repaired_lines == (1,)
    assert result.malformed_lines == (2,)


def test_invalid_utf8_in_a_later_concatenated_object_is_repaired_with_the_line() -> None:
    result = parse(b'{"a":"\xc3\xa9"}{"b":"\xff"}\n')
    assert [r.value for r in result.records] == [{"a": "é"}, {"b": "\ufffd"}]
    assert (result.repaired_lines, result.malformed_lines) == ((1,), ())


def test_nan_is_malformed_on_either_path_and_a_lone_surrogate_is_repaired() -> None:
    # NaN is not JSON: neither the concatenated path nor the repair accepts it.
    result = parse(b'{"a":NaN}\n{"a":1}{"b":NaN}\n{"s":"\\ud800"}\n')
    assert [r.value for r in result.records] == [{"a": 1}, {"s": "\ufffd"}]
    assert result.malformed_lines == (1, 2)
    assert result.repaired_lines == (3,)


def test_numbers_decode_the_same_on_the_fast_and_the_concatenated_path() -> None:
    big = b"123456789012345678901234567890"
    alone = parse(b'{"n":' + big + b"}\n").records[0].value
    concatenated = parse(b'{"x":0}{"n":' + big + b"}\n").records[1].value
    assert alone == concatenated == orjson.loads(b'{"n":' + big + b"}")


def test_line_separators_inside_strings_do_not_split_lines() -> None:
    text = "a\u2028b\u2029c\x85d"
    data = orjson.dumps({"t": text}) + b"\n" + b'{"n":2}\n'
    result = parse(data)
    assert [r.value for r in result.records] == [{"t": text}, {"n": 2}]
    assert [r.line for r in result.records] == [1, 2]


def test_a_huge_line_parses() -> None:
    blob = "x" * 8_000_000
    data = b'{"a":1}\n' + orjson.dumps({"blob": blob}) + b'\n{"b":2}\n'
    result = parse(data)
    assert [r.line for r in result.records] == [1, 2, 3]
    assert result.records[1].value["blob"] == blob
    assert result.records[2].offset == len(data) - 8


def test_hostile_nesting_is_malformed_not_a_crash() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    nested_object = b'{"a":' * 5_000 + b"1" + b"}" * 5_000
    result = parse(deep + b"\n" + nested_object + b"\n" + b'{"a":1}' + deep + b"\n")
    assert [r.value for r in result.records] == [{"a": 1}]
    assert result.malformed_lines == (1, 2, 3)


def test_a_byte_order_mark_is_dropped_only_at_the_start_of_the_file() -> None:
    bom = b"\xef\xbb\xbf"
    assert values(parse(bom + b'{"a":1}\n')) == [(1, 0, {"a": 1})]
    later = parse(bom + b'{"a":1}\n', base_offset=50, first_line=3)
    assert later.records == ()
    assert later.malformed_lines == (3,)


# --- properties ---------------------------------------------------------------------------

_INT64 = st.integers(-(2**63), 2**63 - 1)
_LINES = st.one_of(
    st.dictionaries(st.text(max_size=5), _INT64 | st.text(max_size=5), max_size=3).map(
        orjson.dumps
    ),
    st.sampled_from([b"", b"   ", b"\r", b"null", b"[]", b"{", b"}{", b'{"a":1}{"b":2}', b"\xff"]),
    st.binary(max_size=12).filter(lambda b: b"\n" not in b),
)


@given(st.binary(max_size=400), st.integers(0, 10**6), st.integers(1, 10**6))
def test_arbitrary_bytes_never_raise_and_consumed_ends_at_the_last_newline(
    data: bytes, base_offset: int, first_line: int
) -> None:
    result = parse(data, base_offset=base_offset, first_line=first_line)
    assert result.consumed == data.rfind(b"\n") + 1
    assert result.next_line == first_line + data.count(b"\n")
    for record in result.records:
        assert first_line <= record.line < result.next_line
        assert base_offset <= record.offset < base_offset + result.consumed
        assert type(record.value) is dict
    assert list(result.malformed_lines) == sorted(set(result.malformed_lines))


@given(st.lists(_LINES, max_size=12), st.binary(max_size=10), st.data())
def test_parsing_in_two_steps_equals_parsing_at_once(
    lines: list[bytes], tail: bytes, data: st.DataObject
) -> None:
    whole = b"\n".join(lines) + (b"\n" if lines else b"") + tail
    split = data.draw(st.integers(0, len(whole)), label="split")
    first = parse(whole[:split])
    rest = parse(whole[first.consumed :], base_offset=first.consumed, first_line=first.next_line)
    once = parse(whole)
    assert first.records + rest.records == once.records
    assert first.malformed_lines + rest.malformed_lines == once.malformed_lines
    assert first.consumed + rest.consumed == once.consumed
    assert rest.next_line == once.next_line


@given(st.lists(st.dictionaries(st.text(max_size=8), _INT64, max_size=3), max_size=8))
def test_every_written_object_comes_back_at_its_line_start(objects: list[dict[str, int]]) -> None:
    lines = [orjson.dumps(o) for o in objects]
    data = b"".join(line + b"\n" for line in lines)
    starts = [sum(len(line) + 1 for line in lines[:i]) for i in range(len(lines))]
    expected = [RawRecord(i + 1, starts[i], o) for i, o in enumerate(objects)]
    assert list(parse(data).records) == expected


# --- lenient repair (repaired_lines) -------------------------------------------------------


def test_an_invalid_escape_left_by_a_redaction_tool_is_repaired_not_malformed() -> None:
    result = parse(b'{"a":1}\n{"t":"user\\***@***.***\\n"}\n{"b":2}\n')
    assert [r.value for r in result.records] == [{"a": 1}, {"t": "user\\***@***.***\n"}, {"b": 2}]
    assert (result.repaired_lines, result.malformed_lines) == ((2,), ())


def test_the_repair_keeps_valid_escapes_and_pairs_and_fixes_only_the_rest() -> None:
    text = r'"\\ \" \/ \b \f \n \r \t \u00e9 \ud83d\ude00 \* \x \ud800 \udc00 \u12"'
    repaired = repair(text)
    assert repaired == (
        r'"\\ \" \/ \b \f \n \r \t \u00e9 \ud83d\ude00 \\* \\x \ufffd \ufffd \\u12"'
    )
    assert orjson.loads(repaired.encode()).startswith('\\ " / \b')


def test_control_characters_inside_strings_are_accepted_by_the_repair() -> None:
    result = parse(b'{"t":"a\tb\x01c"}\n')
    assert [r.value for r in result.records] == [{"t": "a\tb\x01c"}]
    assert result.repaired_lines == (1,)


def test_a_line_the_repair_cannot_fully_recover_stays_malformed() -> None:
    result = parse(b'{"t":"a\\*b"} trailing\n{"t":"a\\*b"\n')
    assert result.records == ()
    assert (result.repaired_lines, result.malformed_lines) == ((), (1, 2))


# --- pretty-printed objects ----------------------------------------------------------------


def test_pretty_printed_objects_are_a_stream_of_records_at_their_first_line() -> None:
    one = orjson.dumps({"a": {"b": [1, 2]}, "c": "x"}, option=orjson.OPT_INDENT_2) + b"\n"
    two = orjson.dumps({"d": 1}, option=orjson.OPT_INDENT_2) + b"\n"
    data = one + b'{"compact":true}\n' + two
    result = parse(data)
    assert values(result) == [
        (1, 0, {"a": {"b": [1, 2]}, "c": "x"}),
        (one.count(b"\n") + 1, len(one), {"compact": True}),
        (one.count(b"\n") + 2, len(one) + 17, {"d": 1}),
    ]
    assert (result.malformed_lines, result.consumed, result.next_line) == (
        (),
        len(data),
        data.count(b"\n") + 1,
    )


def test_an_object_split_over_lines_parses_the_same_whole_or_appended_piecewise() -> None:
    data = b"".join(
        orjson.dumps({"n": n, "t": "x" * n}, option=orjson.OPT_INDENT_2) + b"\n" for n in range(4)
    )
    whole = parse(data)
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    for cut in ends:
        head = parse(data[:cut])
        tail = parse(data[head.consumed :], base_offset=head.consumed, first_line=head.next_line)
        assert head.records + tail.records == whole.records, cut
        assert head.malformed_lines + tail.malformed_lines == ()


def test_a_line_holding_only_a_brace_that_never_closes_validly_is_malformed() -> None:
    result = parse(b'{\n"a": 1,\n{"b": 2}\n')
    assert [r.value for r in result.records] == [{"b": 2}]
    assert result.malformed_lines == (1, 2)


def test_a_pretty_printed_file_may_open_with_a_byte_order_mark() -> None:
    data = b"\xef\xbb\xbf" + orjson.dumps({"a": 1}, option=orjson.OPT_INDENT_2) + b"\n"
    assert values(parse(data)) == [(1, 0, {"a": 1})]
