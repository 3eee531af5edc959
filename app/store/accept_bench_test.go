package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/inspecthq/inspect/internal/storetest"
)

// BenchmarkAccept measures the store's durable accept alone, 16 writers.
func BenchmarkAccept(b *testing.B) {
	for _, driver := range storetest.Drivers {
		b.Run(driver, func(b *testing.B) {
			s := storetest.Open(b, driver)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if _, err := s.Accept(context.Background(), acceptance(fmt.Sprintf("d%d", i), i, fmt.Sprintf("s%d", i))); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
