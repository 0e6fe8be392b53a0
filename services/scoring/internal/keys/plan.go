package keys

// ForgetAccount drops this replica's cached lookups of every key of an account, so that the next
// request of any of them reads the account's plan from the database: billing calls it after it moved
// the account to another plan, and the meter, which takes the plan from the key on every Admit, then
// applies the new limits from that request on. Other replicas keep their cached plan for at most
// DefaultCacheTTL. A background refresh under way does not bring the dropped entries back.
func (s *Service) ForgetAccount(accountID string) {
	s.cache.Range(func(k, v any) bool {
		if v.(*cached).key.AccountID == accountID {
			s.cache.Delete(k)
		}
		return true
	})
}
