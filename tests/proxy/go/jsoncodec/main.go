// jsoncodec: Go's encoding/json as a peer of the proxy's acceptance tests.
//
// One request per stdin line, one answer per stdout line, both base64 after a one-letter
// operation:
//
//	E <json>    encode: read the value (numbers kept as written) and write it with
//	            json.Marshal, as a Go server does (escapes <, >, & and U+2028/2029, sorts
//	            object members)
//	D <stream>  decode: read the bytes as a stream with json.Decoder into interface{}
//	            (numbers as float64, as a Go client holds them) until the end; answer a
//	            JSON object {"values": [...], "error": "..."} (the error empty if none)
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
)

type reading struct {
	Values []interface{} `json:"values"`
	Error  string        `json:"error"`
}

func encode(data []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value interface{}
	if err := dec.Decode(&value); err != nil {
		return []byte("!" + err.Error())
	}
	out, err := json.Marshal(value)
	if err != nil {
		return []byte("!" + err.Error())
	}
	return out
}

func decode(data []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	read := reading{Values: []interface{}{}}
	for {
		var value interface{}
		err := dec.Decode(&value)
		if err == io.EOF {
			break
		}
		if err != nil {
			read.Error = err.Error()
			break
		}
		read.Values = append(read.Values, value)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(read); err != nil {
		return []byte(`{"values":[],"error":"cannot encode the reading"}`)
	}
	return bytes.TrimRight(out.Bytes(), "\n")
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadString('\n')
		if len(line) < 2 {
			return
		}
		data, derr := base64.StdEncoding.DecodeString(line[2 : len(line)-1])
		var answer []byte
		switch {
		case derr != nil:
			answer = []byte("!bad base64")
		case line[0] == 'E':
			answer = encode(data)
		default:
			answer = decode(data)
		}
		out.WriteString(base64.StdEncoding.EncodeToString(answer))
		out.WriteByte('\n')
		out.Flush()
		if err != nil {
			return
		}
	}
}
